// What a command with --json prints when it fails: a script reading its output gets
// JSON on failure too, with the exit status the command then ends with.
struct JSONFailure: Encodable {
    let error: String
    let exitStatus: Int32

    /// `body`'s result; when it throws and `json` is set, the failure printed as JSON
    /// first, then thrown on.
    static func reported<T>(if json: Bool, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            if json { try? printJSON(JSONFailure(error: "\(error)", exitStatus: ExitStatus.of(error).rawValue)) }
            throw error
        }
    }
}
