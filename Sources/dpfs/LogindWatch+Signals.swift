// What the watch does with each of logind's signals. sd-bus calls these on the
// watch's thread, from LogindBus.process, with the watch as their context.
import CSystemd

extension LogindWatch {
    private static func watch(_ context: UnsafeMutableRawPointer?) -> LogindWatch? {
        context.map { Unmanaged<LogindWatch>.fromOpaque($0).takeUnretainedValue() }
    }

    /// The session's Lock: loginctl lock-session, or whoever asks logind for it.
    static let onLock: sd_bus_message_handler_t = { _, context, _ in
        watch(context)?.lock(now: false, because: "the session's screen locked")
        return 0
    }

    /// The screen locker's word: SetLockedHint on the session.
    static let onSessionChanged: sd_bus_message_handler_t = { message, context, _ in
        guard let watch = watch(context), let session = watch.followed else { return 0 }
        let locked: Bool
        switch BusMessage.propertyChange(in: message, interface: LogindBus.sessionInterface, name: "LockedHint",
                                         type: "b", read: BusMessage.bool) {
        case .unchanged: return 0
        case .changed(let hint): locked = hint
        // Unread, it counts as locked: the lock fails closed.
        case .invalidated: locked = (try? watch.bus?.lockedHint(of: session)) ?? true
        }
        if locked {
            watch.lock(now: false, because: "the session's screen locked (its LockedHint)")
        } else {
            watch.logger.info("the session's screen unlocked: the device stays locked until its passcode")
        }
        return 0
    }

    static let onSleep: sd_bus_message_handler_t = { message, context, _ in
        // PrepareForSleep(true) comes before the suspend, (false) after the resume.
        guard let watch = watch(context) else { return 0 }
        if BusMessage.bool(message) == true {
            watch.lock(now: true, because: "the machine is going to sleep")
            watch.releaseSleepDelay()
        } else {
            watch.holdSleepDelay()
        }
        return 0
    }

    static let onSessionRemoved: sd_bus_message_handler_t = { message, context, _ in
        guard let watch = watch(context), let id = BusMessage.string(message),
              let followed = watch.followed, id == followed.id else { return 0 }
        watch.lockForLostSession(because: "the session ended")
        watch.followedEnded = true
        watch.mustChooseAgain = true
        return 0
    }

    /// A session of any user began: the user's only one, perhaps, now to follow.
    static let onSessionNew: sd_bus_message_handler_t = { _, context, _ in
        watch(context)?.mustChooseAgain = true
        return 0
    }

    /// The user's Display changed: their display session is another, or none.
    static let onUserChanged: sd_bus_message_handler_t = { message, context, _ in
        switch BusMessage.propertyChange(in: message, interface: LogindBus.userInterface, name: "Display",
                                         type: "(so)", read: BusMessage.idAndPath) {
        case .unchanged: break
        case .changed, .invalidated: watch(context)?.mustChooseAgain = true
        }
        return 0
    }

    /// NameOwnerChanged for logind's name: an empty new owner is logind gone.
    static let onLogindOwnerChanged: sd_bus_message_handler_t = { message, context, _ in
        // (name, old owner, new owner)
        guard BusMessage.string(message) == LogindBus.service, BusMessage.string(message) != nil,
              BusMessage.string(message) == "" else { return 0 }
        watch(context)?.lostLogind = true
        return 0
    }
}
