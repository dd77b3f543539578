// dpfs biometry: the simulated user's face or finger. Tests enroll, re-enroll (which
// invalidates .biometryCurrentSet items) and queue the answers to the next prompts
// (match, nomatch, cancel, or the passcode), or drop them; a keychain read of an item behind an
// access control, or LAContext.evaluatePolicy, takes the next one.
import ArgumentParser
import DPFSProtocol
import Foundation

extension BiometryType: ExpressibleByArgument {}
extension BiometryAnswer: ExpressibleByArgument {}
extension KeychainAuthentication.Interaction: ExpressibleByArgument {}

struct Biometry: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The simulated user's biometry: enroll, re-enroll, answer prompts.",
        subcommands: [Enroll.self, Unenroll.self, Reenroll.self, Respond.self, Clear.self, Timeout.self,
                      BiometryStatusCommand.self])

    struct Enroll: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Enroll a face or finger (the device needs a passcode, as on iOS).")
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Option(help: "faceID (default) or touchID.") var type: BiometryType?

        func run() throws {
            let state = try Biometry.send(.enroll(type: type), to: mountpoint)
            print("enrolled \(state.type.rawValue)")
        }
    }

    struct Unenroll: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove the enrollment: .biometryCurrentSet items become invalid for good.")
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Option(help: .hidden) var type: BiometryType?

        func run() throws {
            _ = try Biometry.send(.unenroll, to: mountpoint)
            print("no biometry enrolled")
        }
    }

    struct Reenroll: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Enroll anew: the domain state changes and .biometryCurrentSet items become invalid.")
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Option(help: "faceID or touchID (default: as before).") var type: BiometryType?

        func run() throws {
            let state = try Biometry.send(.reenroll(type: type), to: mountpoint)
            print("re-enrolled \(state.type.rawValue)")
        }
    }

    struct Respond: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Queue the answer to the next prompt(s): match, nomatch, cancel, or passcode.",
            discussion: """
                A passcode answer reads the passcode from --passcode-file, else from stdin \
                (or a prompt on a terminal), never from the command line.
                """)
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Argument(help: "match, nomatch, cancel or passcode.") var answer: BiometryAnswer
        // Numbers taken as they come, dash and all (.unconditional): "-1" read as an option
        // was "a missing value", not the option's own refusal of a negative number.
        @Option(parsing: .unconditional, help: "Answer this many prompts the same way.") var times = 1
        @Option(help: "For a passcode answer: read the passcode from the first line of this file.") var passcodeFile: String?

        func validate() throws {
            guard times >= 1 else { throw ValidationError("--times must be at least 1") }
            if passcodeFile != nil && answer != .passcode {
                throw ValidationError("--passcode-file goes with a passcode answer only")
            }
        }

        func run() throws {
            let client = try DaemonDeadline.client(for: mountpoint)
            let secrets = answer == .passcode ? [try PasscodeSource.read(file: passcodeFile)] : []
            let reply = try client.send(.biometry(.respond(answer: answer, times: times)), secrets: secrets)
            if let state = reply.biometry { print(Biometry.queued(state)) }
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Drop every queued answer.",
            discussion: """
                Answers wait in the daemon until a prompt takes them, whoever queued them: \
                a test that failed before its prompts leaves its answers to the next one.
                """)
        @Argument(help: "The mountpoint.") var mountpoint: String

        func run() throws {
            print(Biometry.queued(try Biometry.send(.clearAnswers, to: mountpoint)))
        }
    }

    struct Timeout: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "How long a prompt waits for an answer before it fails as cancelled (default 5 s), until the unmount.")
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Argument(help: "Seconds, more than 0 and at most 9.") var seconds: Double

        func validate() throws {
            guard seconds > 0, seconds <= 9 else { throw ValidationError("the timeout is more than 0 and at most 9 seconds") }
        }

        func run() throws {
            let state = try Biometry.send(.promptTimeout(seconds: seconds), to: mountpoint)
            print("a prompt waits \(state.promptTimeout) s for an answer")
        }
    }

    struct BiometryStatusCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status", abstract: "Show the enrollment, lockout and queued answers.")
        @Argument(help: "The mountpoint.") var mountpoint: String
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            let state = try Biometry.send(.state, to: mountpoint)
            if json { return try printJSON(state) }
            print("enrolled: \(state.enrolled ? "yes" : "no")")
            print("type: \(state.type.rawValue)")
            if let domain = state.domainState { print("domain state: \(domain)") }
            print("failed matches: \(state.failedMatches)")
            if state.lockedOut { print("locked out\(Self.cause(state.lockout)), until the passcode is entered") }
            print("queued answers: \(state.queued)")
            if let prompts = state.prompts { print("prompts waiting: \(prompts)") }
            print("prompt timeout: \(state.promptTimeout) s")
        }

        private static func cause(_ lockout: BiometryLockout?) -> String {
            switch lockout {
            case .failedMatches?: return " after five failed matches"
            case .restart?: return " since the restart"
            case .passcodeUnused?: return " after 48 hours without the passcode"
            case nil: return ""
            }
        }
    }

    static func queued(_ state: BiometryReply) -> String {
        "\(state.queued) answer\(state.queued == 1 ? "" : "s") queued"
    }

    static func send(_ request: BiometryRequest, to mountpoint: String) throws -> BiometryReply {
        guard let state = try DaemonDeadline.client(for: mountpoint).send(.biometry(request)).biometry else {
            throw CLIError("the daemon sent no biometry state")
        }
        return state
    }
}
