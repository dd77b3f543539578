// Which login session the lock follows. `dpfs mount` run inside a session (a
// terminal, a desktop's autostart) follows the one its XDG_SESSION_ID names. A
// service of the user's own systemd (dpfs@.service) is in no session and has no
// XDG_SESSION_ID: it follows the user's session as logind names it, their display
// session (the User's Display: the graphical one where there is one), else their
// only session. That one changes as the user logs out and in while their systemd
// keeps running: the watch chooses again when logind says so.
import Glibc

/// Where the session to follow comes from.
enum SessionSource: Sendable, Equatable {
    /// XDG_SESSION_ID's: this session, and no other after it ends.
    case named(String)
    /// The user's display session, whichever it is now.
    case user(uid_t)

    init(sessionID: String?, uid: uid_t) {
        if let sessionID, !sessionID.isEmpty { self = .named(sessionID) } else { self = .user(uid) }
    }
}

/// A session the watch follows.
struct FollowedSession: Equatable {
    let id: String
    let path: String
    /// How it was chosen, for the log: "XDG_SESSION_ID's", "uid 1000's display session".
    let chosenAs: String
}

extension LogindBus {
    /// The session `source` names now; throws one line saying why there is none.
    func session(of source: SessionSource) throws -> FollowedSession {
        switch source {
        case .named(let id):
            do {
                let path = try call(Self.managerPath, Self.managerInterface, "GetSession",
                                    append: { BusMessage.append($0, string: id) },
                                    read: { BusMessage.string($0, type: "o") })
                try checkExists(path)
                return FollowedSession(id: id, path: path, chosenAs: "XDG_SESSION_ID's")
            } catch {
                throw LogindError("logind does not know session \(id): \(error)")
            }
        case .user(let uid):
            let user = try userPath(uid)
            let display: (id: String, path: String)
            let sessions: [(id: String, path: String)]
            do {
                display = try property(user, Self.userInterface, "Display", type: "(so)", read: BusMessage.idAndPath)
                sessions = try property(user, Self.userInterface, "Sessions", type: "a(so)", read: BusMessage.idsAndPaths)
            } catch {
                throw LogindError("logind does not know uid \(uid): \(error)")
            }
            let (chosen, chosenAs): ((id: String, path: String)?, String)
            if !display.id.isEmpty {
                (chosen, chosenAs) = (display, "uid \(uid)'s display session")
            } else if sessions.count == 1 {
                (chosen, chosenAs) = (sessions[0], "uid \(uid)'s only session")
            } else {
                (chosen, chosenAs) = (nil, "")
            }
            guard let chosen else {
                throw LogindError("uid \(uid) has no display session and \(sessions.isEmpty ? "no" : String(sessions.count)) sessions "
                    + "to choose from; set XDG_SESSION_ID to the one to follow")
            }
            do { try checkExists(chosen.path) } catch {
                throw LogindError("logind does not know session \(chosen.id), \(chosenAs): \(error)")
            }
            return FollowedSession(id: chosen.id, path: chosen.path, chosenAs: chosenAs)
        }
    }

    /// The object path of uid's User: logind's GetUser.
    func userPath(_ uid: uid_t) throws -> String {
        do {
            return try call(Self.managerPath, Self.managerInterface, "GetUser",
                            append: { BusMessage.append($0, uint32: uid) },
                            read: { BusMessage.string($0, type: "o") })
        } catch {
            throw LogindError("logind has no session of uid \(uid): \(error)")
        }
    }

    /// The session's LockedHint as logind has it now.
    func lockedHint(of session: FollowedSession) throws -> Bool {
        try property(session.path, Self.sessionInterface, "LockedHint", type: "b", read: BusMessage.bool)
    }

    /// Reads the session's Id, which only a session that exists has: a signal
    /// subscribed on a path with no session behind it would never come.
    private func checkExists(_ path: String) throws {
        _ = try property(path, Self.sessionInterface, "Id", type: "s") { BusMessage.string($0) }
    }
}
