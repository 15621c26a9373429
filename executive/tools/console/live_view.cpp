#include "live_view.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace daqx::console {
namespace {

// Back to the first line drawn (cursor up, column 1) and clear from there to the end of the screen.
std::string back_over(std::size_t lines) {
  if (lines == 0) return {};
  return "\x1b[" + std::to_string(lines) + "A\r\x1b[J";
}

}  // namespace

LiveView::Mode LiveView::mode_for(std::FILE* out) {
  const char* term = std::getenv("TERM");
  if (isatty(fileno(out)) == 1 && (term == nullptr || std::strcmp(term, "dumb") != 0)) return Mode::in_place;
  return Mode::append;
}

void LiveView::show(const std::vector<std::string>& lines) {
  std::string text;
  if (mode_ == Mode::append) {
    for (const std::string& line : lines) text.append(line).append("\n");
  } else {
    std::size_t columns = 0, rows = 0;
    winsize size{};
    if (ioctl(fileno(out_), TIOCGWINSZ, &size) == 0) {
      columns = size.ws_col;
      rows = size.ws_row;
    }
    text = back_over(drawn_);
    // A line that wraps or a block taller than the screen would move the cursor further than drawn_ knows.
    std::size_t room = rows > 1 ? rows - 1 : lines.size();
    std::size_t count = std::min(lines.size(), room);
    const bool cut = count < lines.size();
    if (cut && count > 0) --count;
    for (std::size_t i = 0; i < count; ++i) {
      std::string line = lines[i];
      if (columns > 1 && line.size() >= columns) line.resize(columns - 1);
      text.append(line).append("\n");
    }
    if (cut) text.append("... ").append(std::to_string(lines.size() - count)).append(" more lines (a taller window shows them)\n");
    drawn_ = count + (cut ? 1 : 0);
  }
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

void LiveView::erase() {
  if (mode_ != Mode::in_place || drawn_ == 0) return;
  const std::string text = back_over(drawn_);
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
  drawn_ = 0;
}

}  // namespace daqx::console
