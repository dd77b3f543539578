// Biometry requests: the test's hand on the simulated user (enroll, unenroll,
// reenroll, respond, clear) and LocalAuthentication's calls (state, evaluate, invalidate).
import DataProtection
import DPFSProtocol
import Foundation

extension RequestHandler {
    func handleBiometry(_ request: BiometryRequest, secrets: [SecureBuffer]) throws -> ControlReply {
        let user = items.user
        var errorCode: Int?
        if case .respond(let answer, _) = request, answer == .passcode {
            guard secrets.count == 1 else { return .failure("a passcode answer needs the passcode") }
        } else if !secrets.isEmpty {
            return .failure("malformed request: only a passcode answer carries a secret")
        }
        switch request {
        case .evaluate(_, let context, _, _, _), .invalidate(let context):
            guard KeychainAuthentication.isValidToken(context) else { return .failure("malformed request: a context token is 32 hex digits") }
        default:
            break
        }
        switch request {
        case .state:
            break
        case .enroll(let type):
            try user.enroll(type: type)
        case .unenroll:
            try user.unenroll()
        case .reenroll(let type):
            try user.reenroll(type: type)
        case .respond(let answer, let times):
            try user.respond(answer, times: times, passcode: secrets.first)
        case .clearAnswers:
            user.clearAnswers()
        case .evaluate(let policy, let context, _, let reuse, let interactive):
            errorCode = user.evaluate(policy, context: context, reuse: reuse,
                                      interactive: interactive).localAuthenticationCode
        case .invalidate(let context):
            user.invalidate(context: context)
        case .promptTimeout(let seconds):
            try user.setPromptTimeout(seconds)
        }
        var reply = ControlReply(ok: true)
        reply.biometry = user.state(errorCode: errorCode)
        return reply
    }
}
