// dpfs's exit statuses (dpfs(1), EXIT STATUS), so that a script can tell a wrong
// passcode from a busy mount point without reading the message. gocryptfs's
// distinct codes are the model; the numbers are dpfs's own.
import DataProtection
import DPFSProtocol

enum ExitStatus: Int32 {
    case failure = 1
    case mountPointNotEmpty = 10
    case wrongPasscode = 12
    case passcodeDelay = 13
    case deviceLocked = 14
    case notADpfsMount = 15
    case deviceNotFound = 16
    case rollbackRefused = 17
    /// dpfs backup --skip-damaged wrote the backup without the files it could not read.
    case backupIncomplete = 18
    case usage = 64

    /// The status a failure exits with.
    static func of(_ error: any Error) -> ExitStatus {
        switch error {
        case let error as CLIError: return error.status
        case let error as KeychainCall.Unreachable: return of(error.cause)
        case let error as LockError: return of(error)
        case TPMError.lockout: return .passcodeDelay
        case let error as DeviceError:
            if case .notInitialised = error { return .deviceNotFound }
            return .failure
        case let error as DeviceRecordError:
            if case .unreadable = error { return .failure }
            return .rollbackRefused
        case let error as ControlClientError:
            switch error {
            case .refused: return .notADpfsMount
            case .daemon(_, let failure?): return of(failure)
            case .daemon, .cannotConnect, .noAnswer, .daemonDied: return .failure
            }
        default: return .failure
        }
    }

    static func of(_ error: LockError) -> ExitStatus {
        switch error {
        case .wrongPasscode: return .wrongPasscode
        case .mustWait, .tpmLockout: return .passcodeDelay
        case .unavailable: return .deviceLocked
        case .erased, .noPasscode, .passcodeAlreadySet, .failureNotSaved, .emptyPasscode, .lockedMeanwhile: return .failure
        }
    }

    static func of(_ failure: ControlFailure) -> ExitStatus {
        switch failure {
        case .wrongPasscode: return .wrongPasscode
        case .passcodeDelay: return .passcodeDelay
        case .deviceLocked: return .deviceLocked
        case .erased: return .failure
        }
    }
}
