// The examples in the documentation, so tests can load, validate or run each one and name it by file and line.
#pragma once

#include <string>
#include <vector>

namespace daqx::test {

struct DocBlock {
  std::string file;      // path of the Markdown file
  int line = 0;          // the line of the block's first content line (after the ```lang line)
  std::string language;  // what follows ``` ("xml", "sh", ""), lower case
  std::string text;

  std::string where() const { return file + ":" + std::to_string(line); }
};

// The repository's docs/ folder.
std::string docs_directory();
// The repository itself (docs/, config/, tests/data/).
std::string source_directory();

// Every fenced block of the README and every docs/*.md, in file and line order.
std::vector<DocBlock> doc_blocks();
// The blocks of `language` ("xml") whose root element is <Partition>: whole partitions, not fragments.
std::vector<DocBlock> doc_partitions();
// The names of a block's top-level elements, in order ("Endpoint", "Policy" for a fragment holding both).
std::vector<std::string> top_level_elements(const std::string& xml);

// Every `inline code` span of every docs/*.md, with its line; `language` is "inline".
std::vector<DocBlock> doc_inline_code();

// The block's text preceded by line breaks, so that a line N of the file written from it is line N of the
// Markdown file: messages about it ("file:31: ...") point into the documentation.
std::string aligned_text(const DocBlock& block);

// Files under `directory` (recursively) whose names end with `suffix`, sorted.
std::vector<std::string> files_ending_with(const std::string& directory, const std::string& suffix);

}  // namespace daqx::test
