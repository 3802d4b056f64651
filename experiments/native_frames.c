/* Where a process died, in native frames: preload this and a segmentation fault or bus error
 * prints the faulting thread's stack (library + offset) to stderr before the process dies.
 * Python's faulthandler shows only threads that run Python; this also names the library of a
 * thread a driver started (how docs/reliability.md found faults in libnvidia-opencl.so.1).
 *
 *   cc -O1 -shared -fPIC -o /tmp/native_frames.so experiments/native_frames.c
 *   LD_PRELOAD=/tmp/native_frames.so python experiments/threads_cold_start.py ...
 *
 * Only async-signal-safe calls after the fault, but backtrace() (glibc: safe once loaded,
 * which the constructor does by calling it once). */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_fault(int sig, siginfo_t *info, void *context)
{
    void *frames[64];
    char line[128];
    (void)context;
    int len = snprintf(line, sizeof line, "\n=== native frames: signal %d at %p, thread %d\n", sig,
                       info->si_addr, (int)gettid());
    write(2, line, (size_t)len);
    backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
    signal(sig, SIG_DFL); /* die of it as before (and let a core be written) */
    raise(sig);
}

__attribute__((constructor)) static void install(void)
{
    void *warm[1];
    backtrace(warm, 1); /* loads libgcc's unwinder now, not in the handler */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, 0);
    sigaction(SIGBUS, &sa, 0);
}
