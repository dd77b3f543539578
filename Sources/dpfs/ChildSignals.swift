// The signals dpfs run passes on to its program, and the wait for the program's end.
// They are blocked and taken with sigwaitinfo — no handler, no shared state.
// A signal the terminal sends (Ctrl-C) already reaches the program, which shares dpfs
// run's process group; only signals sent to dpfs run itself (kill) are forwarded.
import Glibc

enum ChildSignals {
    static let forwarded: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    /// Blocks the forwarded signals and SIGCHLD in this thread (threads started later
    /// inherit the mask). Returns the set to wait on and the mask before.
    static func blockForwardedSignals() -> (set: sigset_t, previous: sigset_t) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in forwarded { sigaddset(&set, signal) }
        sigaddset(&set, SIGCHLD)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &set, &previous)
        return (set, previous)
    }

    /// Whether this process ignores `signal` (as under nohup): the program then inherits
    /// the ignoring instead of getting the default action back.
    static func isIgnored(_ signal: Int32) -> Bool {
        var current = sigaction()
        guard sigaction(signal, nil, &current) == 0 else { return false }
        return unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self) == 1  // SIG_IGN
    }

    /// Waits until `child` ends, forwarding signals to it (or to `target`, which passes
    /// them on to it); returns its exit status, or 128+N when signal N ended it.
    static func forwardUntilExit(of child: pid_t, signals: sigset_t, to target: pid_t? = nil) -> Int32 {
        var set = signals
        while true {
            if let status = reap(child) { return status }
            var info = siginfo_t()
            let signal = sigwaitinfo(&set, &info)
            if signal < 0 { continue }  // EINTR
            // si_code <= 0: sent by a process (kill, sigqueue, tkill); the kernel's own
            // (a terminal's) reached the program already.
            if signal != SIGCHLD && info.si_code <= 0 { kill(target ?? child, signal) }
        }
    }

    private static func reap(_ child: pid_t) -> Int32? {
        var status: Int32 = 0
        let rc = waitpid(child, &status, WNOHANG)
        guard rc == child else { return rc < 0 && errno != EINTR ? 1 : nil }
        let signal = status & 0x7f
        if signal == 0 { return (status >> 8) & 0xff }
        if signal == 0x7f { return nil }  // stopped, not ended
        return 128 + signal
    }
}
