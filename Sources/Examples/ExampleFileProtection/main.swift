// Example: iOS file protection from app code, run inside the sandbox with `dpfs run`.
//
//   dpfs run MNT -- ExampleFileProtection write   # diary.txt complete, notes.txt untilFirstAuth
//   dpfs run MNT -- ExampleFileProtection read    # what each file gives in the device's state
//   dpfs run MNT -- ExampleFileProtection launch  # none files, with the class given at creation
//
// `read` prints one line per file: "diary.txt: readable: …" or "diary.txt: unavailable
// (EPERM)" — after `dpfs lock --now` the complete diary is unavailable while the notes
// stay readable; after `dpfs restart` both are unavailable until the next unlock.
// `launch` is what an app woken before the first unlock may do, as on iOS: write files
// of class none (their class given at creation) into Documents, whose class is
// untilFirstAuth.
import DataProtectionKit
import Foundation

func documents() -> URL {
    // The iOS idiom: under `dpfs run` this is the mount's Documents directory.
    guard let url = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask).first else {
        fatalError("no documents directory")
    }
    return url
}

func write() throws {
    let diary = documents().appendingPathComponent("diary.txt")
    let notes = documents().appendingPathComponent("notes.txt")
    // On iOS: try data.write(to: diary, options: [.atomic, .completeFileProtection])
    try Data("Dear diary: only an unlocked device shows this.\n".utf8)
        .writeProtected(to: diary, options: [.atomic, .completeFileProtection])
    try Data("Readable from the first unlock until the next reboot.\n".utf8)
        .writeProtected(to: notes, options: [.atomic, .completeFileProtectionUntilFirstUserAuthentication])
    for url in [diary, notes] {
        print("\(url.lastPathComponent): written, \(url.fileProtection?.rawValue ?? "no class")")
    }
}

func launch() throws {
    let state = documents().appendingPathComponent("launch-state.txt")
    let marker = documents().appendingPathComponent("launch-marker.txt")
    // On iOS: try data.write(to: state, options: .noFileProtection)
    try Data("woken at \(Date())\n".utf8).writeProtected(to: state, options: .noFileProtection)
    // On iOS: FileManager.default.createFile(atPath:contents:attributes:)
    guard FileManager.default.createFileHonouringProtection(
        atPath: marker.path, contents: Data("launched\n".utf8),
        attributes: [.protectionKey: FileProtectionType.none]) else {
        throw CocoaError(.fileWriteUnknown)
    }
    for url in [state, marker] {
        print("\(url.lastPathComponent): written, \(url.fileProtection?.rawValue ?? "no class")")
    }
}

func read() {
    print("protected data available: \(ProtectedData.isAvailable)")
    for name in ["diary.txt", "notes.txt"] {
        let url = documents().appendingPathComponent(name)
        do {
            let text = String(decoding: try Data(contentsOf: url), as: UTF8.self)
            print("\(name): readable: \(text.trimmingCharacters(in: .newlines))")
        } catch where error.isProtectedDataUnavailable {
            print("\(name): unavailable (EPERM)")
        } catch {
            print("\(name): error: \(error)")
        }
    }
}

do {
    switch CommandLine.arguments.dropFirst().first {
    case "write": try write()
    case "read": read()
    case "launch": try launch()
    default:
        FileHandle.standardError.write(Data("usage: ExampleFileProtection write|read|launch\n".utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("ExampleFileProtection: \(error)\n".utf8))
    exit(1)
}
