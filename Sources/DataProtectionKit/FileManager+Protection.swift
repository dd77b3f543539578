// FileManager calls that honour FileAttributeKey.protectionKey, which Foundation on Linux
// accepts and ignores (setAttributes, createFile) or never reports (attributesOfItem).
import DPFSProtocol
import Foundation
import Glibc

extension FileManager {
    /// `setAttributes(_:ofItemAtPath:)`, with `.protectionKey` applied through the mount.
    public func setAttributesHonouringProtection(_ attributes: [FileAttributeKey: Any], ofItemAtPath path: String) throws {
        var rest = attributes
        if let value = rest.removeValue(forKey: .protectionKey) {
            try URL(fileURLWithPath: path).setFileProtection(try Self.protectionType(value, path: path))
        }
        if !rest.isEmpty { try setAttributes(rest, ofItemAtPath: path) }
    }

    /// `attributesOfItem(atPath:)` plus `.protectionKey` (a FileProtectionType) when the
    /// item is in a dpfs mount.
    public func attributesOfItemIncludingProtection(atPath path: String) throws -> [FileAttributeKey: Any] {
        var attributes = try attributesOfItem(atPath: path)
        if let protection = URL(fileURLWithPath: path).fileProtection { attributes[.protectionKey] = protection }
        return attributes
    }

    /// `createFile(atPath:contents:attributes:)`, with `.protectionKey` set before the
    /// contents are written. Returns false on failure, as Foundation's does.
    @discardableResult
    public func createFileHonouringProtection(atPath path: String, contents: Data?,
                                              attributes: [FileAttributeKey: Any]? = nil) -> Bool {
        var rest = attributes ?? [:]
        guard let value = rest.removeValue(forKey: .protectionKey) else {
            return createFile(atPath: path, contents: contents, attributes: attributes)
        }
        do {
            let protection = try Self.protectionType(value, path: path)
            try (contents ?? Data()).write(to: URL(fileURLWithPath: path), protection: protection, options: .atomic)
            if !rest.isEmpty { try setAttributes(rest, ofItemAtPath: path) }
            return true
        } catch {
            return false
        }
    }

    private static func protectionType(_ value: Any, path: String) throws -> FileProtectionType {
        if let protection = value as? FileProtectionType { return protection }
        if let raw = value as? String { return FileProtectionType(rawValue: raw) }
        throw FileErrors.cocoa(EINVAL, path: path, writing: true)
    }
}
