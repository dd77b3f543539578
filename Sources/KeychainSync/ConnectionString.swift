// The account's server as the user gave it (`--server`): a postgresql:// URL or libpq's
// key=value pairs, read by libpq's own parser (PQconninfoParse) before anything
// connects. The string may hold a password (user:password@, ?password=, password=) or
// a key's passphrase (sslpassword), so it is never quoted back: a malformed one gets a
// fixed sentence, since libpq's parse errors repeat the whole string, and the values
// libpq marks as secret are struck from whatever libpq says at a connection.
import CPostgres
import Foundation
import PostgresLoader

struct ConnectionString {
    struct Option: Equatable {
        let keyword: String
        let value: String
        /// libpq's dispchar "*": a password, to be hidden.
        let secret: Bool
    }

    /// The options the string sets, in libpq's order (no defaults, no environment).
    let options: [Option]
    private let text: String

    static let malformed = SyncError(
        "the server is not a connection string libpq can read (a postgresql:// URL or key=value pairs); "
            + "it is not repeated here, as it may hold a password")

    init(_ text: String) throws {
        let pq = try Self.libpq()
        self.text = text
        // libpq takes anything else without "=" for a bare database name: never what
        // --server means, and a typo there would silently connect elsewhere.
        guard Self.uriPrefixes.contains(where: text.hasPrefix) || text.contains("=") else { throw Self.malformed }
        var message: UnsafeMutablePointer<CChar>?
        let parsed = pq.pointee.conninfoParse(text, &message)
        // The message quotes the string: dropped unread.
        if let message { pq.pointee.freemem(message) }
        guard let parsed else { throw Self.malformed }
        defer { pq.pointee.conninfoFree(parsed) }
        options = Self.options(of: parsed)
    }

    static let uriPrefixes = ["postgresql://", "postgres://"]

    /// libpq, loaded on first use.
    static func libpq() throws -> UnsafePointer<dpfs_libpq> {
        guard let pq = dpfs_libpq() else {
            throw SyncError("keychain sync needs libpq (Debian's libpq5): \(String(cString: dpfs_libpq_error()))")
        }
        return pq
    }

    private static func options(of parsed: UnsafeMutablePointer<PQconninfoOption>) -> [Option] {
        var options: [Option] = []
        var cursor = parsed
        while let keyword = cursor.pointee.keyword {
            if let value = cursor.pointee.val {
                let secret = cursor.pointee.dispchar.map { String(cString: $0).contains("*") } ?? false
                options.append(Option(keyword: String(cString: keyword), value: String(cString: value), secret: secret))
            }
            cursor += 1
        }
        return options
    }

    /// `message` with the string itself and every secret value in it replaced by "***".
    func redacting(_ message: String) -> String {
        let secrets = [text] + options.filter(\.secret).map(\.value)
        return secrets.filter { !$0.isEmpty }.reduce(message) { $0.replacingAll($1, with: "***") }
    }
}

extension String {
    fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        return components(separatedBy: target).joined(separator: replacement)
    }
}
