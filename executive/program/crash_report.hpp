// What an executive says when it dies of a fault: the signal, the faulting address and a backtrace on stderr (its
// log), or the exception that escaped a thread. A DAQ node that vanishes without a word costs a shift hours.
#pragma once

namespace daqx {

// Installs the handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT (each reports once, then the signal is
// raised again with its default action, so the exit status and a core file are what they would have been) and
// a terminate handler that names an escaped exception. Under AddressSanitizer only the latter: the sanitizer
// reports faults better.
void install_crash_report();

}  // namespace daqx
