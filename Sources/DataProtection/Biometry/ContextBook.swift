// What the simulated user knows of LAContexts, by token: what each live one proved,
// and which were invalidated. An invalidated token stays known, so that an
// evaluation already under way when it was invalidated is not remembered for it
// and the context never again opens anything.
struct ContextBook: Sendable {
    /// A bound on what a runaway loop of contexts can make the daemon keep, for the
    /// proofs and again for the invalidated tokens (the oldest forgotten first).
    static let capacity = 4096

    private var proofs: [String: AuthenticationProof] = [:]
    private var invalidated: Set<String> = []
    private var invalidationOrder: [String] = []

    func proof(of token: String) -> AuthenticationProof? { proofs[token] }

    func isInvalidated(_ token: String) -> Bool { invalidated.contains(token) }

    /// Adds `proof` to what `token` proved, unless it was invalidated meanwhile.
    mutating func remember(_ proof: AuthenticationProof, for token: String) {
        guard !invalidated.contains(token) else { return }
        if proofs[token] == nil && proofs.count >= Self.capacity { proofs.removeAll() }
        proofs[token, default: AuthenticationProof()].merge(proof)
    }

    mutating func invalidate(_ token: String) {
        proofs.removeValue(forKey: token)
        guard invalidated.insert(token).inserted else { return }
        invalidationOrder.append(token)
        if invalidationOrder.count > Self.capacity {
            invalidated.remove(invalidationOrder.removeFirst())
        }
    }

    /// A restart: nothing proved before it counts; an invalidated context stays so.
    mutating func forgetProofs() {
        proofs.removeAll()
    }
}
