// The backing tree `dpfs init` makes: the root and the layout directories (Documents,
// Library, tmp, …), each with its class record and random ID, each name sealed under
// its parent's ID and tagged on the directory (dpfs(5), "Names").
import Foundation
import CLinux
import Glibc

public enum SandboxTree {
    public static func create(in directory: DeviceDirectory, defaultClass: ProtectionClass,
                              metadataKey: SecureBuffer, names: NameCipher) throws(SystemError) {
        var backingPaths: [String: (path: String, id: [UInt8])] = [:]
        for plain in [""] + DeviceDirectory.sandboxLayout {
            let id = DirectoryClassRecord.newDirectoryID()
            let path: String
            var nameTag: [UInt8] = []
            if plain.isEmpty {
                path = directory.sandboxPath
            } else {
                let parentPlain = (plain as NSString).deletingLastPathComponent
                guard let parent = backingPaths[parentPlain] else { throw SystemError("layout out of order", plain, code: EINVAL) }
                let name = (plain as NSString).lastPathComponent
                let sealed = names.seal(Array(name.utf8), directoryID: parent.id)
                path = parent.path + "/" + sealed.stored
                nameTag = NameBinding.tag(identity: id, place: sealed.place, metadataKey: metadataKey)
            }
            guard mkdir(path, 0o755) == 0 else { throw SystemError("mkdir", path) }
            let record = DirectoryClassRecord.encode(defaultClass, directoryID: id, metadataKey: metadataKey)
            var rc = record.withUnsafeBytes { setxattr(path, MountAttributes.protection, $0.baseAddress, $0.count, 0) }
            if rc == 0 && !nameTag.isEmpty {
                rc = nameTag.withUnsafeBytes { setxattr(path, NameBinding.attribute, $0.baseAddress, $0.count, 0) }
            }
            guard rc == 0 else { throw SystemError("setxattr (the device directory needs a filesystem with user xattrs)", path) }
            backingPaths[plain] = (path, id)
        }
    }
}
