// Fault and terminate reports for the executive (see crash_report.hpp).
#include "crash_report.hpp"

#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <typeinfo>

namespace daqx {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizerHandlesFaults = true;
#else
constexpr bool kSanitizerHandlesFaults = false;
#endif

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kMaxFrames = 64;

// Only async-signal-safe calls below: write(2), backtrace_symbols_fd (it writes, it does not allocate, once
// backtrace() has been called before, which loads the unwinder), and formatting into a local buffer.
void write_text(const char* text) {
  std::size_t length = strlen(text);
  while (length > 0) {
    const ssize_t written = ::write(STDERR_FILENO, text, length);
    if (written <= 0) return;
    text += written;
    length -= static_cast<std::size_t>(written);
  }
}

void write_number(std::uintptr_t value, unsigned base) {
  char digits[32];
  char* end = digits + sizeof digits - 1;
  *end = '\0';
  char* at = end;
  do {
    *--at = "0123456789abcdef"[value % base];
    value /= base;
  } while (value != 0 && at > digits);
  if (base == 16) write_text("0x");
  write_text(at);
}

void on_fatal_signal(int signal, siginfo_t* info, void*) {
  write_text("fatal executive: killed by SIG");
  const char* name = sigabbrev_np(signal);
  write_text(name != nullptr ? name : "?");
  if (info != nullptr && info->si_code <= 0) {  // sent (kill, raise, abort), not a fault: si_addr means nothing
    write_text(" sent by pid ");
    write_number(static_cast<std::uintptr_t>(info->si_pid), 10);
  } else if (info != nullptr) {
    write_text(" at address ");
    write_number(reinterpret_cast<std::uintptr_t>(info->si_addr), 16);
  }
  write_text(" in thread ");
  write_number(static_cast<std::uintptr_t>(::syscall(SYS_gettid)), 10);
  write_text(" of pid ");
  write_number(static_cast<std::uintptr_t>(::getpid()), 10);
  write_text("; backtrace (module(symbol+offset) [address]):\n");
  void* frames[kMaxFrames];
  backtrace_symbols_fd(frames, backtrace(frames, kMaxFrames), STDERR_FILENO);
  // SA_RESETHAND restored the default action: raised again, the signal ends the process as it would have.
  ::raise(signal);
}

void on_terminate() {
  // Not in a signal handler: the exception may be named with ordinary calls.
  if (std::exception_ptr escaped = std::current_exception()) {
    try {
      std::rethrow_exception(escaped);
    } catch (const std::exception& e) {
      write_text("fatal executive: an exception escaped a thread: ");
      write_text(typeid(e).name());
      write_text(": ");
      write_text(e.what());
      write_text("\n");
    } catch (...) {
      write_text("fatal executive: an exception of unknown type escaped a thread\n");
    }
  } else {
    write_text("fatal executive: std::terminate called without an exception\n");
  }
  std::abort();  // reported once more, with a backtrace, by the SIGABRT handler
}

}  // namespace

void install_crash_report() {
  std::set_terminate(on_terminate);
  if (kSanitizerHandlesFaults) return;
  // A stack overflow leaves no stack to report on: the handler runs on one of its own (main thread's faults;
  // other threads' overflows end without a report, as they would anyway).
  static char alternate_stack[64 * 1024];
  stack_t stack{};
  stack.ss_sp = alternate_stack;
  stack.ss_size = sizeof alternate_stack;
  ::sigaltstack(&stack, nullptr);
  void* warm_up[1];
  backtrace(warm_up, 1);  // loads libgcc's unwinder now, not inside a handler
  struct sigaction action {};
  action.sa_sigaction = on_fatal_signal;
  action.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (int signal : kFatalSignals) ::sigaction(signal, &action, nullptr);
}

}  // namespace daqx
