// A delay lock on sleep (logind's Manager.Inhibit, mode "delay"), held while the lock
// follows suspend: logind then waits, up to its InhibitDelayMaxSec, for the device to
// lock before the machine sleeps, instead of freezing it with the keys in memory while
// the PrepareForSleep signal is still on its way. Released once the lock is done, and
// taken again at the resume.
import Glibc

extension LogindBus {
    /// A new delay lock on sleep: the descriptor that holds it until closed.
    func delaySleep() throws -> Int32 {
        try call(Self.managerPath, Self.managerInterface, "Inhibit", append: { message in
            BusMessage.append(message, string: "sleep") && BusMessage.append(message, string: "dpfs")
                && BusMessage.append(message, string: "locks the device before the machine sleeps")
                && BusMessage.append(message, string: "delay")
        }, read: BusMessage.fileDescriptor)
    }
}

extension LogindWatch {
    /// Takes the delay lock where suspend is a trigger and none is held; a logind that
    /// refuses it (its policy) leaves the lock to the signal alone, said in the log.
    func holdSleepDelay() {
        guard triggers.contains(.suspend), sleepDelay < 0, let bus else { return }
        do {
            sleepDelay = try bus.delaySleep()
        } catch {
            logger.warning("--lock-on: logind gave no delay lock on sleep (\(error)): the lock may come after the suspend")
        }
    }

    /// Lets logind go on to sleep (or drops the lock with the bus).
    func releaseSleepDelay() {
        guard sleepDelay >= 0 else { return }
        close(sleepDelay)
        sleepDelay = -1
    }
}
