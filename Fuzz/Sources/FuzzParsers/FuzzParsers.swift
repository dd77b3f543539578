// One libFuzzer entry point for every parser that reads untrusted bytes; the
// DPFS_FUZZ_TARGET environment variable picks which: header (a backing file's
// header), keybag (keybag.json, MAC check included), frame (control-socket frames,
// fed through a socket pair as the daemon reads them), body (a frame's body, decoded
// as the daemon decodes a request). Any crash or hang is a bug.
import DPFSProtocol
import DataProtection
import Foundation
import Glibc

enum Target: String { case header, keybag, frame, body }

let target = Target(rawValue: ProcessInfo.processInfo.environment["DPFS_FUZZ_TARGET"] ?? "header") ?? .header
let device: DeviceDirectory = {
    let root = NSTemporaryDirectory() + "dpfs-fuzz-\(getpid())"
    try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    return DeviceDirectory(root)
}()
let deviceSecret = SecureBuffer.random(count: 32)
let metadataKey = MetadataKey.derive(from: deviceSecret)

// SwiftPM links an executable's entry point as <module>_main; this one hands the
// process to libFuzzer's driver (libFuzzer's own main is then not linked in).
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<Int32>,
                     _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                     _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

@_cdecl("FuzzParsers_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { data, size in
        guard let data else { return 0 }
        return fuzz(data, size)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    switch target {
    case .header:
        if let header = try? FileHeader(parsing: bytes, metadataKey: metadataKey) {
            // Whatever parses must serialise back to a header that parses the same.
            let again = header.serialized(metadataKey: metadataKey).withUnsafeBytes {
                try? FileHeader(parsing: $0, metadataKey: metadataKey)
            }
            precondition(again?.current == header.current, "header round trip differs")
        }
    case .keybag:
        _ = FileManager.default.createFile(atPath: device.keybagPath, contents: Data(bytes))
        _ = try? KeybagFile.load(from: device, deviceSecret: deviceSecret)
    case .frame:
        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { return 0 }
        defer { close(pair[0]) }
        if size > 0 { _ = send(pair[1], data, min(size, 65536), Int32(MSG_NOSIGNAL)) }
        close(pair[1])
        while (try? Frame<SecureBuffer>.read(from: pair[0])) != nil {}
    case .body:
        _ = try? ControlCoding.decode(ControlRequest.self, [UInt8](bytes))
    }
    return 0
}
