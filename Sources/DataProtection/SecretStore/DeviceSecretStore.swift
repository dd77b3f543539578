// Creating and loading a device's secret in its store. A missing, unreadable or
// unsafe secret is one clear error naming the store and the device UUID; nothing is
// ever created in its place after `init`.
import Foundation
import Glibc

public enum SecretStoreError: Error, CustomStringConvertible {
    case missing(store: String, device: String, reason: String)
    case unsafe(store: String, reason: String)
    case cannotCreate(store: String, reason: String)

    public var description: String {
        switch self {
        case .missing(let store, let device, let reason):
            return "the device secret of device \(device) cannot be read from secret store \(store): \(reason)"
        case .unsafe(let store, let reason):
            return "secret store \(store) is not safe: \(reason)"
        case .cannotCreate(let store, let reason):
            return "cannot create the device secret in secret store \(store): \(reason)"
        }
    }
}

public enum DeviceSecretStore {
    public static let secretSize = 32

    /// Makes a new random secret for `deviceUUID` and stores it durably; a TPM store
    /// also gives the sealed object's blobs, which the keybag keeps.
    public static func create(for deviceUUID: String,
                              in location: SecretStoreLocation) throws -> (SecureBuffer, TPMSealedBlobs?) {
        switch location {
        case .tpm2(let tcti):
            do {
                let (secret, blobs) = try TPMSecretStore.createSecret(for: deviceUUID, tcti: tcti)
                return (secret, blobs)
            } catch {
                throw SecretStoreError.cannotCreate(store: location.description, reason: "\(error)")
            }
        case .file(let directory):
            do {
                try prepareDirectory(directory)
            } catch let error as SystemError {
                throw SecretStoreError.cannotCreate(store: location.description, reason: error.description)
            }
            try checkDirectory(directory, store: location)
            let secret = SecureBuffer.random(count: secretSize)
            do {
                try AtomicFile.createSecret(secret, at: path(of: deviceUUID, in: directory))
            } catch {
                secret.wipe()
                throw SecretStoreError.cannotCreate(store: location.description, reason: "\(error)")
            }
            return (secret, nil)
        }
    }

    /// The secret of `deviceUUID`, into locked memory; `sealed` is the keybag's blobs
    /// of a TPM store.
    public static func load(for deviceUUID: String, from location: SecretStoreLocation,
                            sealed: TPMSealedBlobs? = nil) throws -> SecureBuffer {
        switch location {
        case .tpm2(let tcti):
            guard let sealed else {
                throw SecretStoreError.missing(store: location.description, device: deviceUUID,
                                               reason: "the keybag holds no sealed object")
            }
            do {
                return try TPMSecretStore.loadSecret(sealed, tcti: tcti)
            } catch {
                throw SecretStoreError.missing(store: location.description, device: deviceUUID, reason: "\(error)")
            }
        case .file(let directory):
            try checkDirectory(directory, store: location)
            let file = path(of: deviceUUID, in: directory)
            var info = stat()
            guard lstat(file, &info) == 0 else {
                throw SecretStoreError.missing(store: location.description, device: deviceUUID,
                                               reason: "\(file): \(String(cString: strerror(errno)))")
            }
            if let problem = SecretStoreSafety.problem(of: file, info, isDirectory: false) {
                throw SecretStoreError.unsafe(store: location.description, reason: problem)
            }
            do {
                return try AtomicFile.readSecret(file, count: secretSize)
            } catch {
                throw SecretStoreError.missing(store: location.description, device: deviceUUID, reason: "\(error)")
            }
        }
    }

    /// The file of `deviceUUID`'s secret in a file store's directory.
    public static func path(of deviceUUID: String, in directory: String) -> String {
        directory + "/" + deviceUUID + ".secret"
    }

    /// Creates the directory (and missing parents) with mode 0700.
    static func prepareDirectory(_ directory: String) throws {
        var info = stat()
        if stat(directory, &info) == 0 { return }
        let parent = (directory as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != directory { try prepareDirectory(parent) }
        guard mkdir(directory, 0o700) == 0 || errno == EEXIST else { throw SystemError("mkdir", directory) }
    }

    /// The directory must be safe (SecretStoreSafety).
    static func checkDirectory(_ directory: String, store: SecretStoreLocation) throws {
        var info = stat()
        guard stat(directory, &info) == 0 else {
            throw SecretStoreError.unsafe(store: store.description,
                                          reason: "\(directory): \(String(cString: strerror(errno)))")
        }
        if let problem = SecretStoreSafety.problem(of: directory, info, isDirectory: true) {
            throw SecretStoreError.unsafe(store: store.description, reason: problem)
        }
    }
}
