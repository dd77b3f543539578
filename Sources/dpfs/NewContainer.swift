// Another app's container, made whole before it appears under its name: a directory
// in .containers under a name no app sees, given the app's class before anything is
// inside (its subdirectories then copy it, as every new directory copies its
// parent's), filled, then renamed to the bundle ID. Interrupted at any point, it
// leaves no container of the wrong class behind, which a later run would take as one
// the user made and keep; a staging tree it leaves goes with the next container made
// (NewContainer+Staging).
import CLinux
import DataProtection
import DPFSProtocol
import Foundation
import Glibc

struct NewContainer {
    /// Its path once in place: .containers/BUNDLE_ID.
    let path: String
    let bundleID: String
    let protectionClass: ProtectionClass
    let subdirectories: [String]

    /// Makes the container, unless another run put one in place meanwhile.
    func make() throws {
        try withStagingTree { staging in
            do {
                try createDirectory(staging)
                try setClass(on: staging)
                for subdirectory in subdirectories { try createDirectory(staging + "/" + subdirectory) }
            } catch {
                try? FileManager.default.removeItem(atPath: staging)
                throw error
            }
            guard rename(staging, path) == 0 else {
                let code = errno
                try? FileManager.default.removeItem(atPath: staging)
                // Another run of the same app made it first: that one stands.
                if code == ENOTEMPTY || code == EEXIST { return }
                throw failure(String(cString: strerror(code)))
            }
        }
    }

    private func createDirectory(_ directory: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw failure((error as NSError).localizedDescription)
        }
    }

    private func setClass(on directory: String) throws {
        let name = protectionClass.name
        guard name.withCString({ setxattr(directory, MountAttributes.protection, $0, strlen($0), 0) }) != 0 else { return }
        let code = errno
        if code == EPERM {
            throw failure("the device is locked, and setting its class (\(name)) needs the key of the class it would otherwise take; unlock the device and run again",
                          status: .deviceLocked)
        }
        throw failure("setting its class (\(name)) failed: \(String(cString: strerror(code)))")
    }

    func failure(_ reason: String, status: ExitStatus = .failure) -> CLIError {
        CLIError("cannot make the container of \(bundleID) at \(path): \(reason)", status: status)
    }
}
