#pragma once
// The temporaries an OutputFile is writing right now, kept where a signal handler can reach them.
// SIGINT, SIGTERM or SIGHUP end the process by default without running a destructor, and so
// left a hidden ".NAME.tmp-PID-N" beside every file being written (a trace of a long layer is
// written for minutes). With remove_on_fatal_signals() installed, such a signal removes every
// live temporary and then ends the process as the signal's default action would (same exit
// status, 128 + signal). Only lock-free atomics and unlinkat(2) run in the handler.
namespace wse {

// A slot for `path`, any length (-1 when all 64 are taken, or its folder cannot be opened: then it
// is simply not removed by a signal). release_temporary(-1) does nothing.
int register_temporary(const char* path);
void release_temporary(int slot);

// Unlinks every registered temporary; async-signal-safe.
void remove_live_temporaries();

// Installs the handler for SIGINT, SIGTERM and SIGHUP (once, at the start of main).
void remove_on_fatal_signals();

}  // namespace wse
