// swift-tools-version:6.1
// Micro-benchmarks of dpfs's core (ordo-one/benchmark), kept out of the main build
// and test run: block seal and open per GiB for both block ciphers, per-file key
// unwrap, and the passcode KDF; and KeychainBench, a plain executable that needs a
// mount: keychain calls through Security (socket) against the ItemStore in-process.
// Run: Scripts/bench-micro [benchmark filter]
import PackageDescription

let package = Package(
    name: "dpfs-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "dpfs", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1",
                 traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "CoreBenchmarks",
            dependencies: [
                .product(name: "DataProtection", package: "dpfs"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "KeychainBench",
            dependencies: [
                .product(name: "Security", package: "dpfs"),
                .product(name: "ItemStore", package: "dpfs"),
                .product(name: "DataProtection", package: "dpfs"),
                .product(name: "DPFSProtocol", package: "dpfs"),
            ],
            path: "Sources/KeychainBench"
        ),
    ]
)
