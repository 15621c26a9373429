// A block of lines that replaces itself in place on a terminal (ANSI cursor movement, redrawn whole each time)
// and is simply appended elsewhere (a file, a pipe), where every block stays readable in order.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace daqx::console {

class LiveView {
 public:
  enum class Mode { in_place, append };

  // in_place when `out` is a terminal whose TERM is not "dumb"; append otherwise.
  static Mode mode_for(std::FILE* out);

  LiveView(std::FILE* out, Mode mode) : out_(out), mode_(mode) {}
  Mode mode() const noexcept { return mode_; }

  // Draws `lines`: in place, over what the previous show drew (cut to the terminal's width and height so that
  // nothing wraps or scrolls away); appended, after it.
  void show(const std::vector<std::string>& lines);

  // In place: removes what the last show drew, so that a message written next is not overwritten by the next
  // show (which then draws below the message). Appended: nothing to do.
  void erase();

 private:
  std::FILE* out_;
  Mode mode_;
  std::size_t drawn_ = 0;  // lines on the screen from the last show, in place
};

}  // namespace daqx::console
