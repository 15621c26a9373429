// A log sink that formats each record (log_line.hpp) and writes it to a file descriptor in one write, so
// lines from threads, and from processes sharing the descriptor, never interleave.
#pragma once

#include <string>

#include "daqx/services/log.hpp"
#include "daqx/services/log_line.hpp"

namespace daqx {

// Every line carries `context` (the executive's URL; "" prints "-") and the current log_run(). The sink is
// called under the log's lock (log.cpp), so it reuses one buffer and allocates only while lines grow.
LogSink make_log_writer(int fd, std::string context, LogFormat format);

// Writes the whole buffer, resuming after partial writes and signals; gives up silently on an error (a log
// that cannot be written has nowhere to report that).
void write_log_bytes(int fd, std::string_view bytes) noexcept;

}  // namespace daqx
