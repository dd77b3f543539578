// Streams of replies that carry secrets (keychainExport): each reply with its secrets
// in locked memory, which the handler must copy out before it returns if it keeps them.
extension ControlClient {
    /// Sends `request` and hands every reply, with its secrets, to `body` until it
    /// returns false. An error reply is thrown; so is the connection closing first.
    public func receive(_ request: ControlRequest, _ body: (ControlReply, [LockedSecret]) throws -> Bool) throws {
        let message = try ControlCoding.encode(request)
        try tellingDeath { try ClientFrame(body: message).write(to: fd) }
        while true {
            let frame = try tellingDeath { try ClientFrame.read(from: fd) }
            let reply = try ControlCoding.decode(ControlReply.self, frame.body)
            if !reply.ok { throw ControlClientError.daemon(reply.error ?? "the daemon refused the request", failure: reply.failure) }
            if try !body(reply, frame.secrets) { return }
        }
    }
}
