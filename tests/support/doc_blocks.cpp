// Finds the fenced and inline code of docs/*.md with their lines (doc_blocks.hpp).
#include "doc_blocks.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include "process.hpp"

namespace daqx::test {

std::string source_directory() { return DAQX_TEST_SOURCE_DIR; }

std::string docs_directory() { return source_directory() + "/docs"; }

std::vector<std::string> files_ending_with(const std::string& directory, const std::string& suffix) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(directory)) {
    const std::string path = entry.path().string();
    if (entry.is_regular_file() && path.size() >= suffix.size() &&
        path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0)
      files.push_back(path);
  }
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

// docs/*.md and the README, which shows the first commands a newcomer types.
std::vector<std::string> markdown_files() {
  std::vector<std::string> files = {source_directory() + "/README.md"};
  for (const auto& entry : std::filesystem::directory_iterator(docs_directory()))
    if (entry.is_regular_file() && entry.path().extension() == ".md") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The first element's name, past the XML declaration, comments and blanks.
std::string root_element(const std::string& xml) {
  std::size_t at = 0;
  while ((at = xml.find('<', at)) != std::string::npos) {
    if (xml.compare(at, 4, "<!--") == 0) {
      at = xml.find("-->", at);
      if (at == std::string::npos) return {};
      continue;
    }
    if (xml.compare(at, 2, "<?") == 0) {
      at = xml.find("?>", at);
      if (at == std::string::npos) return {};
      continue;
    }
    std::size_t end = at + 1;
    while (end < xml.size() && (std::isalnum(static_cast<unsigned char>(xml[end])) != 0 || xml[end] == ':')) ++end;
    return xml.substr(at + 1, end - at - 1);
  }
  return {};
}

}  // namespace

std::vector<DocBlock> doc_blocks() {
  std::vector<DocBlock> blocks;
  for (const std::string& file : markdown_files()) {
    const std::vector<std::string> lines = lines_of(read_text(file));
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::string& line = lines[i];
      const std::size_t fence = line.find("```");
      if (fence == std::string::npos || line.find_first_not_of(' ') != fence) continue;
      DocBlock block;
      block.file = file;
      block.line = static_cast<int>(i) + 2;
      block.language = line.substr(fence + 3);
      std::transform(block.language.begin(), block.language.end(), block.language.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      std::size_t j = i + 1;
      for (; j < lines.size() && lines[j].find("```") == std::string::npos; ++j) block.text += lines[j] + "\n";
      blocks.push_back(std::move(block));
      i = j;  // past the closing fence
    }
  }
  return blocks;
}

std::vector<std::string> top_level_elements(const std::string& xml) {
  std::vector<std::string> names;
  int depth = 0;
  std::size_t at = 0;
  while ((at = xml.find('<', at)) != std::string::npos) {
    if (xml.compare(at, 4, "<!--") == 0 || xml.compare(at, 9, "<![CDATA[") == 0 || xml.compare(at, 2, "<?") == 0) {
      const char* end_mark = xml.compare(at, 4, "<!--") == 0 ? "-->" : xml[at + 1] == '?' ? "?>" : "]]>";
      at = xml.find(end_mark, at);
      if (at == std::string::npos) break;
      continue;
    }
    const std::size_t close = xml.find('>', at);
    if (close == std::string::npos) break;
    if (xml[at + 1] == '/') {
      --depth;
    } else {
      std::size_t end = at + 1;
      while (end < close && std::isspace(static_cast<unsigned char>(xml[end])) == 0 && xml[end] != '/') ++end;
      if (depth == 0) names.push_back(xml.substr(at + 1, end - at - 1));
      if (xml[close - 1] != '/') ++depth;
    }
    at = close + 1;
  }
  return names;
}

std::vector<DocBlock> doc_partitions() {
  std::vector<DocBlock> partitions;
  for (DocBlock& block : doc_blocks())
    if (block.language == "xml" && root_element(block.text) == "Partition") partitions.push_back(std::move(block));
  return partitions;
}

std::vector<DocBlock> doc_inline_code() {
  std::vector<DocBlock> spans;
  for (const std::string& file : markdown_files()) {
    const std::vector<std::string> lines = lines_of(read_text(file));
    bool in_fence = false;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::string& line = lines[i];
      if (line.find("```") != std::string::npos && line.find_first_not_of(' ') == line.find("```")) {
        in_fence = !in_fence;
        continue;
      }
      if (in_fence) continue;
      std::size_t at = 0;
      while ((at = line.find('`', at)) != std::string::npos) {
        const std::size_t end = line.find('`', at + 1);
        if (end == std::string::npos) break;
        spans.push_back({file, static_cast<int>(i) + 1, "inline", line.substr(at + 1, end - at - 1)});
        at = end + 1;
      }
    }
  }
  return spans;
}

std::string aligned_text(const DocBlock& block) {
  return std::string(static_cast<std::size_t>(block.line - 1), '\n') + block.text;
}

}  // namespace daqx::test
