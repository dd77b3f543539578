// The names in a directory held open, read through a descriptor of its own so the
// caller's descriptor stays open and its offset untouched.
import Glibc

/// The names in the directory open as `directory`, without "." and ".."; nil when it
/// cannot be opened or read to its end.
public func directoryNames(of directory: Int32) -> [String]? {
    let listing = openat(directory, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard listing >= 0 else { return nil }
    guard let stream = fdopendir(listing) else { close(listing); return nil }
    defer { closedir(stream) }
    var names: [String] = []
    while true {
        errno = 0
        guard let entry = readdir(stream) else { return errno == 0 ? names : nil }
        let name = withUnsafePointer(to: &entry.pointee.d_name) {
            $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
        }
        if name != "." && name != ".." { names.append(name) }
    }
}
