// The account's server as the user gave it (`--server`): a postgresql:// URL or libpq's
// key=value pairs, read by libpq's own parser (PQconninfoParse) before anything
// connects. The string may hold a password (user:password@, ?password=, password=) or
// a key's passphrase (sslpassword), so it is never quoted back: a malformed one gets a
// fixed sentence, since libpq's parse errors repeat the whole string; the form that
// `sync status` shows is rebuilt from the parsed options without those libpq marks as
// secret; and the secret values are struck from whatever libpq says at a connection.
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
    /// The URL scheme as given ("postgresql://" or "postgres://"); nil for key=value pairs.
    let scheme: String?
    private let text: String

    static let malformed = SyncError(
        "the server is not a connection string libpq can read (a postgresql:// URL or key=value pairs); "
            + "it is not repeated here, as it may hold a password")

    init(_ text: String) throws {
        let pq = try Self.libpq()
        self.text = text
        scheme = Self.uriPrefixes.first { text.hasPrefix($0) }
        // libpq takes anything else without "=" for a bare database name: never what
        // --server means, and a typo there would silently connect elsewhere.
        guard scheme != nil || text.contains("=") else { throw Self.malformed }
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

    /// Whether the string sets a value libpq marks secret (a password).
    var hasSecret: Bool { options.contains { $0.secret && !$0.value.isEmpty } }

    /// `message` with the string itself and every secret value in it replaced by "***".
    func redacting(_ message: String) -> String {
        let secrets = [text] + options.filter(\.secret).map(\.value)
        return secrets.filter { !$0.isEmpty }.reduce(message) { $0.replacingAll($1, with: "***") }
    }

    /// The string as `sync status` shows it: the same form, every secret left out.
    var displayed: String {
        let shown = options.filter { !$0.secret }
        guard let scheme else { return shown.map { "\($0.keyword)=\(Self.quoted($0.value))" }.joined(separator: " ") }
        return Self.url(scheme: scheme, shown)
    }

    /// A value of key=value pairs, quoted where libpq needs it.
    private static func quoted(_ value: String) -> String {
        let plain = !value.isEmpty && !value.contains { $0.isWhitespace || $0 == "'" || $0 == "\\" }
        if plain { return value }
        return "'" + value.replacingAll("\\", with: "\\\\").replacingAll("'", with: "\\'") + "'"
    }
}

// MARK: the URL form

extension ConnectionString {
    /// The keywords a URL holds outside its query: user@host:port/dbname.
    private static let urlParts: Set<String> = ["user", "host", "port", "dbname"]

    private static func url(scheme: String, _ options: [Option]) -> String {
        func value(_ keyword: String) -> String? { options.first { $0.keyword == keyword }?.value }
        var url = scheme
        if let user = value("user") { url += percentEncoded(user) + "@" }
        url += hostList(hosts: value("host"), ports: value("port"))
        if let dbname = value("dbname") { url += "/" + percentEncoded(dbname) }
        let query = options.filter { !urlParts.contains($0.keyword) }
        if !query.isEmpty {
            url += "?" + query.map { "\($0.keyword)=\(percentEncoded($0.value))" }.joined(separator: "&")
        }
        return url
    }

    /// host:port,host:port as libpq parsed them (one comma-separated list of each).
    private static func hostList(hosts: String?, ports: String?) -> String {
        let hostNames = hosts.map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) } ?? []
        let portNumbers = ports.map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) } ?? []
        let count = max(hostNames.count, portNumbers.count)
        return (0..<count).map { index in
            let host = index < hostNames.count ? hostNames[index] : ""
            let port = index < portNumbers.count ? portNumbers[index] : ""
            // An IPv6 address goes in brackets; a socket directory, percent-encoded.
            let shownHost = host.contains(":") ? "[\(host)]" : percentEncoded(host)
            return port.isEmpty ? shownHost : shownHost + ":" + port
        }.joined(separator: ",")
    }

    /// RFC 3986's unreserved bytes, which a URL carries as they are.
    private static let unreserved = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8))

    private static func percentEncoded(_ text: String) -> String {
        text.utf8.map { byte in
            unreserved.contains(byte) ? String(UnicodeScalar(byte)) : "%" + hexDigits(byte)
        }.joined()
    }

    private static func hexDigits(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xf)]])
    }
}

extension String {
    fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        return components(separatedBy: target).joined(separator: replacement)
    }
}
