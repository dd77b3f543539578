// dpfs keychain add|find|update|delete: SecItem calls sent to the daemon of a mount.
// A failed call prints its OSStatus (`errSecItemNotFound (-25300)`) on stderr and
// exits 1; --json prints {"status": N, "items": [...]} on stdout as well.
import ArgumentParser
import DPFSProtocol
import DataProtection
import Foundation
import Glibc
import ItemStore

struct Keychain: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add, find, update and delete keychain items, with Apple's SecItem semantics.",
        subcommands: [Add.self, Find.self, Update.self, Delete.self])
}

extension Keychain {
    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an item; its data comes from --data-file (a file, or - for stdin) or piped stdin.")
        @OptionGroup var call: KeychainCall
        @OptionGroup var item: ItemAttributeOptions
        @Option(help: "Read the item's data from this file, byte for byte; - reads stdin.") var dataFile: String?
        /// Refused: it would put the secret in the process list. Parsed only to say so.
        @Option(help: .hidden) var data: String?

        func run() throws {
            try call.run {
                try ItemData.refuseOnCommandLine(data, option: "--data", instead: "--data-file")
                // Without --data-file, a piped stdin is the data; a terminal means none.
                let secret = try ItemData.read(file: dataFile ?? (isatty(0) == 0 ? "-" : nil))
                let response = try call.send(KeychainRequest(operation: .add, attributes: item.attributes), data: secret)
                KeychainOutput.printItems(response, json: call.json, returning: call.returning)
            }
        }
    }

    struct Find: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Find items; prints the data (raw bytes) by default, or attributes as key: value lines.")
        @OptionGroup var call: KeychainCall
        @OptionGroup var item: ItemAttributeOptions

        func run() throws {
            try call.run {
                let response = try call.send(KeychainRequest(operation: .find, attributes: item.attributes))
                KeychainOutput.printItems(response, json: call.json, returning: call.returning ?? "data")
            }
        }
    }

    struct Update: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change the data and/or attributes of every matching item.")
        @OptionGroup var call: KeychainCall
        @OptionGroup var item: ItemAttributeOptions
        @OptionGroup var changes: NewAttributeOptions
        @Option(help: "Read the new data from this file, byte for byte; - reads stdin.") var newDataFile: String?
        /// Refused: it would put the secret in the process list. Parsed only to say so.
        @Option(help: .hidden) var newData: String?

        func validate() throws {
            if let problem = KeychainAttributes.problem(in: changes.attributes, itemClass: item.itemClass) {
                throw ValidationError(problem)
            }
        }

        func run() throws {
            try call.run {
                try ItemData.refuseOnCommandLine(newData, option: "--new-data", instead: "--new-data-file")
                guard newDataFile != nil || !changes.attributes.isEmpty else {
                    throw CLIError("nothing to change: give --new-data-file or a --new-… attribute")
                }
                let secret = try ItemData.read(file: newDataFile)
                let response = try call.send(KeychainRequest(operation: .update, attributes: item.attributes,
                                                             updateAttributes: changes.attributes), data: secret)
                KeychainOutput.printItems(response, json: call.json, returning: call.returning)
            }
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete every matching item.")
        @OptionGroup var call: KeychainCall
        @OptionGroup var item: ItemAttributeOptions

        func run() throws {
            try call.run {
                let response = try call.send(KeychainRequest(operation: .delete, attributes: item.attributes))
                KeychainOutput.printItems(response, json: call.json, returning: call.returning)
            }
        }
    }
}

/// Who calls, where, and what comes back: the options every keychain subcommand takes.
/// Limit and return are passed on even where they make no sense (update, delete), so
/// that the store answers errSecParam as Apple's does.
struct KeychainCall: ParsableArguments {
    @Argument(help: "The mountpoint.") var mountpoint: String
    @Option(help: "Bundle ID of the calling app (default: the sandbox's own app).") var app: String?
    @Option(help: "one (default) or all.") var limit: String?
    @Option(name: .customLong("return"), help: "data (default), attributes or both.") var returning: String?
    @Flag(help: "Print {\"status\": N, \"items\": [...]} on stdout; data is base64.") var json = false
    @Option(name: .customLong("authentication-ui"),
            help: "For an item behind an access control: allow (default: ask the simulated user), fail or skip.")
    var authenticationUI: KeychainAuthentication.Interaction?

    func validate() throws {
        if let limit, !["one", "all"].contains(limit) { throw ValidationError("--limit must be one or all") }
        if let returning, !["data", "attributes", "both"].contains(returning) {
            throw ValidationError("--return must be data, attributes or both")
        }
    }

    /// Sends the call, the item's data (if any) as the frame's secret; a failed status
    /// is reported and ends the command with exit 1.
    func send(_ request: KeychainRequest, data: SecureBuffer? = nil) throws -> KeychainResponse {
        var request = request
        request.app = app
        request.limit = limit
        request.returning = returning
        if let authenticationUI { request.authentication = KeychainAuthentication(interaction: authenticationUI) }
        let reply: KeychainResponse?
        do {
            let client = try DaemonDeadline.client(for: mountpoint)
            reply = try client.send(.keychain(request), secrets: data.map { [$0] } ?? []).keychain
        } catch {
            throw Unreachable(cause: error)
        }
        guard let response = reply else { throw Unreachable(cause: CLIError("the daemon sent no keychain reply")) }
        guard response.status == SecStatus.success else {
            if json { KeychainOutput.printJSON(response) }
            let reason = response.message.map { ": \($0)" } ?? ""
            FileHandle.standardError.write(Data((SecStatus.describe(response.status) + reason + "\n").utf8))
            throw ExitCode(response.status == SecStatus.interactionNotAllowed
                           ? ExitStatus.deviceLocked.rawValue : ExitStatus.failure.rawValue)
        }
        return response
    }
}

extension KeychainCall {
    /// A call that reached no daemon (not a dpfs mount, no answer): SecItem's
    /// errSecNotAvailable.
    struct Unreachable: Error, CustomStringConvertible {
        let cause: any Error
        /// The status a SecItem call would get, then why, as the daemon's failures read.
        var description: String { "\(SecStatus.describe(SecStatus.notAvailable)): \(cause)" }
    }

    /// Runs a subcommand's call. With --json, a failure before the daemon gave a status
    /// prints one as well (the man page promises JSON on every failure):
    /// errSecNotAvailable when no daemon was reached, errSecParam for input the call
    /// refused itself (a data file open to others, nothing to change).
    func run(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let exit as ExitCode {
            throw exit  // the daemon's status, printed already
        } catch {
            if json {
                let unreachable = error as? Unreachable
                KeychainOutput.printJSON(KeychainResponse(status: unreachable == nil ? SecStatus.param : SecStatus.notAvailable,
                                                          message: "\(unreachable?.cause ?? error)"))
            }
            throw error
        }
    }
}

/// The item's attributes, as a query or as a new item's attributes.
struct ItemAttributeOptions: ParsableArguments {
    @Option(name: .customLong("class"), help: "genp (default), inet, or keys (SecKey's key items: find and delete).") var itemClass: String?
    @Option var service: String?
    @Option var account: String?
    @Option(help: "inet: the server's host name.") var server: String?
    @Option(name: .customLong("protocol"), help: "inet: the protocol (e.g. htps).") var protocolName: String?
    @Option(help: "inet: the port number.") var port: String?
    @Option(help: "inet: the path.") var path: String?
    @Option(help: "inet: the security domain.") var securityDomain: String?
    @Option(help: "inet: the authentication type.") var authenticationType: String?
    @Option var label: String?
    @Option(help: "Access group (default for a new item: the app's first).") var accessGroup: String?
    @Option(help: "WhenUnlocked (default), AfterFirstUnlock, Always, WhenPasscodeSetThisDeviceOnly, or a ThisDeviceOnly variant.")
    var accessible: String?
    @Option(help: "yes, no (default) or any.") var synchronizable: String?
    @Option(help: "Access control: flags such as biometryCurrentSet, userPresence, devicePasscode, joined by commas with or/and; a query matches only items with these flags.")
    var accessControl: String?
    @OptionGroup var descriptive: DescriptiveOptions

    func validate() throws {
        if let problem = KeychainAttributes.problem(in: attributes) { throw ValidationError(problem) }
    }

    var attributes: [String: String] {
        [("class", itemClass), ("service", service), ("account", account), ("server", server),
         ("protocol", protocolName), ("port", port), ("path", path), ("securityDomain", securityDomain),
         ("authenticationType", authenticationType), ("label", label), ("accessGroup", accessGroup),
         ("accessible", accessible), ("synchronizable", synchronizable), ("accessControl", accessControl)]
            .reduce(into: descriptive.attributes) { attributes, pair in if let value = pair.1 { attributes[pair.0] = value } }
    }
}

/// kSecAttrDescription, Comment, Generic, Creator, Type, IsInvisible and IsNegative,
/// of a new item or a query (update's new ones are NewAttributeOptions').
struct DescriptiveOptions: ParsableArguments {
    @Option(help: "genp, inet: a description.") var description: String?
    @Option(help: "genp, inet: a comment.") var comment: String?
    @Option(help: "genp: application-defined bytes, in hex.") var generic: String?
    @Option(help: "genp, inet: the creator code, a number (a FourCharCode) or text.") var creator: String?
    @Option(help: "genp, inet: the type code, a number (a FourCharCode) or text.") var type: String?
    @Option(help: "genp, inet: yes or no.") var isInvisible: String?
    @Option(help: "genp, inet: yes or no.") var isNegative: String?

    var attributes: [String: String] {
        [("description", description), ("comment", comment), ("generic", generic), ("creator", creator),
         ("type", type), ("isInvisible", isInvisible), ("isNegative", isNegative)]
            .reduce(into: [:]) { attributes, pair in if let value = pair.1 { attributes[pair.0] = value } }
    }
}

/// Update's new attributes: the same names, prefixed with --new-.
struct NewAttributeOptions: ParsableArguments {
    @Option var newService: String?
    @Option var newAccount: String?
    @Option var newServer: String?
    @Option(name: .customLong("new-protocol")) var newProtocolName: String?
    @Option var newPort: String?
    @Option var newPath: String?
    @Option var newSecurityDomain: String?
    @Option var newAuthenticationType: String?
    @Option var newLabel: String?
    @Option var newAccessGroup: String?
    @Option var newAccessible: String?
    @Option var newSynchronizable: String?
    @Option(help: "New access control flags, as --access-control; reading the item then asks for them.")
    var newAccessControl: String?
    @Option var newDescription: String?
    @Option var newComment: String?
    @Option var newGeneric: String?
    @Option var newCreator: String?
    @Option var newType: String?
    @Option var newIsInvisible: String?
    @Option var newIsNegative: String?

    var attributes: [String: String] {
        [("service", newService), ("account", newAccount), ("server", newServer), ("protocol", newProtocolName),
         ("port", newPort), ("path", newPath), ("securityDomain", newSecurityDomain),
         ("authenticationType", newAuthenticationType), ("label", newLabel), ("accessGroup", newAccessGroup),
         ("accessible", newAccessible), ("synchronizable", newSynchronizable), ("accessControl", newAccessControl),
         ("description", newDescription),
         ("comment", newComment), ("generic", newGeneric), ("creator", newCreator), ("type", newType),
         ("isInvisible", newIsInvisible), ("isNegative", newIsNegative)]
            .reduce(into: [:]) { attributes, pair in if let value = pair.1 { attributes[pair.0] = value } }
    }
}

/// An item's data: from a file the caller alone may access, or stdin, into locked
/// memory; never from the command line, where every process could read it.
enum ItemData {
    static func refuseOnCommandLine(_ given: String?, option: String, instead: String) throws {
        guard given != nil else { return }
        throw CLIError("\(option) would put the secret in the process list; use \(instead) F or \(instead) - for stdin")
    }

    /// The whole of `file` ("-": stdin), byte for byte; nil without a file.
    static func read(file: String?) throws -> SecureBuffer? {
        guard let file else { return nil }
        let limit = ControlProtocol.maxItemDataSize
        do {
            if file == "-" { return try SecretInput.readAll(STDIN_FILENO, what: "data", source: "stdin", limit: limit) }
            let fd = try SecretInput.openFile(file, what: "data file")
            defer { close(fd) }
            return try SecretInput.readAll(fd, what: "data", source: file, limit: limit)
        } catch {
            throw CLIError(error)
        }
    }
}

enum KeychainOutput {
    /// Data alone is written raw (byte-exact; several items one per line); attributes
    /// as sorted `key: value` lines, items apart by a blank line.
    static func printItems(_ response: KeychainResponse, json: Bool, returning: String? = nil) {
        if json { return printJSON(response) }
        let items = response.items
        guard !items.isEmpty else { return }
        if returning == "data" {
            var out = Data()
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(0x0a) }
                out.append(item.data ?? Data())
            }
            return FileHandle.standardOutput.write(out)
        }
        let blocks = items.map { item -> String in
            // An app may have given some attributes as bytes, or generic as text: they
            // come in their own maps, and are listed with the others by name.
            let text = (item.attributes ?? [:]).merging(item.textAttributes ?? [:]) { _, given in given }
                .map { ($0.key, "\($0.key): \($0.value)") }
            let bytes = (item.dataAttributes ?? [:]).map { ($0.key, line($0.key, $0.value)) }
            var lines = (text + bytes).sorted { $0.0 < $1.0 }.map(\.1)
            if let data = item.data { lines.append(line("data", data)) }
            return lines.joined(separator: "\n") + "\n"
        }
        FileHandle.standardOutput.write(Data(blocks.joined(separator: "\n").utf8))
    }

    /// Bytes as `name: text` while they are one line of printable UTF-8, else
    /// losslessly as `name.base64: …`.
    private static func line(_ name: String, _ bytes: Data) -> String {
        if let text = String(data: bytes, encoding: .utf8),
           !text.contains(where: { $0.isNewline || $0.asciiValue.map { $0 < 0x20 } == true }) {
            return "\(name): \(text)"
        }
        return "\(name).base64: \(bytes.base64EncodedString())"
    }

    static func printJSON(_ response: KeychainResponse) {
        struct Output: Encodable {
            let status: Int32
            let error: String?
            let message: String?
            let items: [KeychainResponse.Item]
        }
        let output = Output(status: response.status,
                            error: response.status == SecStatus.success ? nil : SecStatus.name(response.status),
                            message: response.message, items: response.items)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = (try? encoder.encode(output)) ?? Data("{\"status\": \(response.status)}".utf8)
        FileHandle.standardOutput.write(json + Data("\n".utf8))
    }
}
