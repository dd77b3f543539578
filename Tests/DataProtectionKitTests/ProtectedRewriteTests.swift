// Rewriting an existing file with a protection class: a class that is refused leaves
// the old content and class as they were; one that is taken replaces the content.
import DataProtectionKit
import Foundation
import Glibc
import XCTest

final class ProtectedRewriteTests: MountedDeviceTestCase {
    /// Writes `old` in class `before`, runs `takeAway`, then asserts that rewriting it in
    /// `after` is refused with EPERM and the file is untouched.
    private func assertRefusedRewriteKeeps(_ before: Data.WritingOptions, _ after: Data.WritingOptions,
                                           _ takeAway: () throws -> Void, file: StaticString = #filePath,
                                           line: UInt = #line) throws {
        let note = device.documents.appendingPathComponent("note-\(before.rawValue)-\(after.rawValue).txt")
        try Data("important-note".utf8).writeProtected(to: note, options: before)
        let oldClass = note.fileProtection
        try takeAway()
        XCTAssertThrowsError(try Data("x".utf8).writeProtected(to: note, options: after), file: file, line: line) {
            XCTAssertTrue($0.isProtectedDataUnavailable, "\($0)", file: file, line: line)
        }
        XCTAssertEqual(try String(contentsOf: note, encoding: .utf8), "important-note",
                       "a refused rewrite loses nothing", file: file, line: line)
        XCTAssertEqual(note.fileProtection, oldClass, file: file, line: line)
    }

    func testARefusedClassLeavesTheOldContent() throws {
        try device.control.unlock(passcodeFile: device.passcodeFile)
        try assertRefusedRewriteKeeps(.noFileProtection, .completeFileProtection) { try device.control.lock(now: true) }
        try assertRefusedRewriteKeeps(.completeFileProtectionUntilFirstUserAuthentication, .completeFileProtection) {}
        try assertRefusedRewriteKeeps(.noFileProtection, .completeFileProtectionUntilFirstUserAuthentication) {
            try device.control.restart()
        }
    }

    func testATakenClassReplacesTheContent() throws {
        try device.control.unlock(passcodeFile: device.passcodeFile)
        let note = device.documents.appendingPathComponent("note.txt")
        try Data("a longer first version".utf8).writeProtected(to: note, options: .noFileProtection)
        let raised = Data("raised".utf8)
        try raised.writeProtected(to: note, options: .completeFileProtection)
        XCTAssertEqual(try Data(contentsOf: note), raised)
        XCTAssertEqual(note.fileProtection, .complete)
        let same = Data("same class".utf8)
        try same.writeProtected(to: note, options: .completeFileProtection)
        XCTAssertEqual(try Data(contentsOf: note), same)
        try Data().writeProtected(to: note, options: .completeFileProtectionUntilFirstUserAuthentication)
        XCTAssertEqual(try Data(contentsOf: note).count, 0, "an empty write empties the file")
        XCTAssertEqual(note.fileProtection, .completeUntilFirstUserAuthentication)
        // A hard link sees the rewrite: the file is rewritten in place, not replaced.
        let link = device.documents.appendingPathComponent("note-link.txt")
        XCTAssertEqual(Glibc.link(note.path, link.path), 0)
        try Data("in place".utf8).writeProtected(to: note, options: .noFileProtection)
        XCTAssertEqual(try String(contentsOf: link, encoding: .utf8), "in place")
    }

    func testCreateFileRefusedKeepsTheOldContent() throws {
        try device.control.unlock(passcodeFile: device.passcodeFile)
        let note = device.documents.appendingPathComponent("created.txt")
        try Data("important-note".utf8).writeProtected(to: note, options: .noFileProtection)
        try device.control.lock(now: true)
        XCTAssertFalse(FileManager.default.createFileHonouringProtection(
            atPath: note.path, contents: Data("x".utf8), attributes: [.protectionKey: FileProtectionType.complete]))
        XCTAssertEqual(try String(contentsOf: note, encoding: .utf8), "important-note")
        XCTAssertThrowsError(try FileManager.default.setAttributesHonouringProtection(
            [.protectionKey: FileProtectionType.complete], ofItemAtPath: note.path))
        XCTAssertEqual(try String(contentsOf: note, encoding: .utf8), "important-note")
        XCTAssertEqual(note.fileProtection, FileProtectionType.none)
    }
}
