// Micro-benchmarks of the core, as the data path uses it: blocks of 4,096 bytes sealed
// and opened a megabyte (one FUSE request) at a time with a request's sealing context
// and nonces (libsodium);
// a file key unwrapped under each kind of class key; the passcode KDF at the
// parameters `dpfs init` uses. One iteration of a block benchmark is 1 GiB, so its
// wall-clock time is the cost per GiB on one core.
import Benchmark
import DataProtection
import Foundation

let blockSize = BlockLayout.plainBlockSize
let cipherBlockSize = BlockLayout.cipherBlockSize
let blocksPerRequest = 256
let requestsPerGiB = 1024

/// Buffers for one request, reused for the whole GiB, as the pool's slots are.
final class RequestBuffers: @unchecked Sendable {
    let plain = UnsafeMutableRawBufferPointer.allocate(byteCount: blocksPerRequest * blockSize, alignment: 4096)
    let sealed = UnsafeMutableRawBufferPointer.allocate(byteCount: blocksPerRequest * cipherBlockSize, alignment: 4096)
    let nonceArea = UnsafeMutableRawPointer.allocate(byteCount: blocksPerRequest * BlockCipher.nonceFieldSize, alignment: 16)
    let state = SecureBuffer(count: BlockCipher.stateSize)
    let key = SecureBuffer.random(count: 32)
    let nonces = NonceSource()
    var ad: (UInt64, UInt64, UInt64) = (0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210, 0)

    init() { Sodium.fillRandom(plain) }

    func sealer(_ cipher: BlockCipher, precomputed: Bool) -> BlockSealer {
        BlockSealer(cipher: cipher, key: key.pointer, state: precomputed ? state.mutableBytes.baseAddress : nil)
    }

    /// Seals one request's blocks (what BlockIO.write does between pread and pwrite).
    func sealRequest(_ sealer: BlockSealer, firstBlock: Int) {
        nonces.fill(nonceArea, count: blocksPerRequest * BlockCipher.nonceFieldSize)
        sealer.withSession { session in
            for index in 0..<blocksPerRequest {
                let output = UnsafeMutableRawBufferPointer(rebasing: sealed[(index * cipherBlockSize)..<((index + 1) * cipherBlockSize)])
                output.baseAddress!.copyMemory(from: nonceArea + index * BlockCipher.nonceFieldSize, byteCount: sealer.cipher.nonceSize)
                ad.2 = UInt64(firstBlock + index).littleEndian
                withUnsafeBytes(of: &ad) { ad in
                    session.seal(UnsafeRawBufferPointer(rebasing: plain[(index * blockSize)..<((index + 1) * blockSize)]),
                                 additionalData: ad.baseAddress!, additionalDataCount: ad.count, into: output)
                }
            }
        }
    }

    /// Opens one request's blocks (what BlockIO.read does after its pread).
    func openRequest(_ sealer: BlockSealer, firstBlock: Int) -> Bool {
        sealer.withSession { session in
            var ok = true
            for index in 0..<blocksPerRequest {
                ad.2 = UInt64(firstBlock + index).littleEndian
                withUnsafeBytes(of: &ad) { ad in
                    ok = session.open(UnsafeRawBufferPointer(rebasing: sealed[(index * cipherBlockSize)..<((index + 1) * cipherBlockSize)]),
                                      additionalData: ad.baseAddress!, additionalDataCount: ad.count,
                                      into: UnsafeMutableRawBufferPointer(rebasing: plain[(index * blockSize)..<((index + 1) * blockSize)])) && ok
                }
            }
            return ok
        }
    }
}

/// A device made the way `dpfs init` makes one, booted and unlocked, in a temporary
/// directory; the KDF here is the cheapest (this is about unwrapping file keys).
final class BenchDevice: @unchecked Sendable {
    let root: String
    let manager: LockStateManager

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("dpfs-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let directory = DeviceDirectory(root)
        let passcode = Array("1234".utf8).withUnsafeBytes { SecureBuffer(copying: $0) }
        let kdf = KDFParameters(opsLimit: 1, memLimit: 8192 * 1024, salt: Bytes(Sodium.randomBytes(16)))
        var made = try DeviceProvisioning.create(store: .file(directory: root + "-secrets"), passcode: passcode,
                                                 defaultProtection: .untilFirstAuth, eraseAfter: nil, kdf: kdf)
        try made.keybag.save(in: directory, deviceSecret: made.secret)
        made.secret.wipe()
        manager = try LockStateManager(directory: directory, gracePeriod: 0)
        try manager.unlock(passcode: passcode)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: root)
        try? FileManager.default.removeItem(atPath: root + "-secrets")
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .cpuTotal], warmupIterations: 1,
                                           maxDuration: .seconds(10), maxIterations: 5)

    let variants: [(String, BlockCipher, Bool)] = [
        ("AES-256-GCM", .aes256GCM, true),
        ("AES-256-GCM, key expanded per block", .aes256GCM, false),
        ("XChaCha20-Poly1305", .xchacha20Poly1305, false),
    ]
    for (name, cipher, precomputed) in variants {
        if cipher == .aes256GCM && !BlockCipher.aes256GCMAvailable { continue }
        Benchmark("Block seal 1 GiB, \(name)") { benchmark in
            let buffers = RequestBuffers()
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                let sealer = buffers.sealer(cipher, precomputed: precomputed)
                for request in 0..<requestsPerGiB { buffers.sealRequest(sealer, firstBlock: request * blocksPerRequest) }
                sealer.finish()
            }
            benchmark.stopMeasurement()
        }
        Benchmark("Block open 1 GiB, \(name)") { benchmark in
            let buffers = RequestBuffers()
            let sealer = buffers.sealer(cipher, precomputed: precomputed)
            buffers.sealRequest(sealer, firstBlock: 0)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                var ok = true
                // The same request's blocks each time: block numbers must match the seal.
                for _ in 0..<requestsPerGiB { ok = buffers.openRequest(sealer, firstBlock: 0) && ok }
                precondition(ok, "a sealed block did not open")
            }
            benchmark.stopMeasurement()
            sealer.finish()
        }
    }

    for protectionClass in [ProtectionClass.complete, .completeUnlessOpen] {
        let how = protectionClass == .complete ? "XChaCha20-Poly1305 under the class key" : "X25519 sealed box"
        Benchmark("File key unwrap, \(protectionClass.name) (\(how))",
                  configuration: .init(metrics: [.wallClock, .throughput], scalingFactor: .kilo,
                                       maxDuration: .seconds(3), maxIterations: 1000)) { benchmark in
            guard let device = try? BenchDevice() else { fatalError("cannot make a device") }
            let fileID = Sodium.randomBytes(FileHeader.fileIDSize)
            let key = SecureBuffer.random(count: FileKeyWrap.fileKeySize)
            guard let wrapped = FileKeyWrap.wrap(key, fileID: fileID, as: protectionClass, device: device.manager) else {
                fatalError("cannot wrap under \(protectionClass.name)")
            }
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                let unwrapped = try? FileKeyWrap.unwrap(wrapped, fileID: fileID, as: protectionClass, device: device.manager)
                blackHole(unwrapped)
            }
            benchmark.stopMeasurement()
        }
    }

    Benchmark("Passcode KDF (dpfs init's parameters)",
              configuration: .init(metrics: [.wallClock, .cpuTotal], maxDuration: .seconds(10),
                                   maxIterations: 10)) { benchmark in
        let passcode = Array("1234".utf8).withUnsafeBytes { SecureBuffer(copying: $0) }
        let deviceSecret = SecureBuffer.random(count: 32)
        let parameters = KDFParameters.standard()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try? PasscodeKDF.deriveKey(passcode: passcode, parameters: parameters, deviceSecret: deviceSecret))
        }
        benchmark.stopMeasurement()
    }
}
