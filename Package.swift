// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "dpfs",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "dpfs", targets: ["dpfs"]),
        // Libraries for the separate Fuzz/ and Benchmarks/ packages.
        .library(name: "DataProtection", targets: ["DataProtection"]),
        .library(name: "Control", targets: ["Control"]),
        .library(name: "ItemStore", targets: ["ItemStore"]),
        // For app code (SPEC §10): Apple's SecItem API against the mounted device.
        .library(name: "Security", targets: ["Security"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium",
                       providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CFuse", pkgConfig: "fuse3",
                       providers: [.apt(["libfuse3-dev"])]),
        .systemLibrary(name: "CLinux"),
        .target(name: "DataProtection", dependencies: ["CSodium", "CLinux"]),
        .target(name: "ItemStore", dependencies: [
            "DataProtection",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        .target(name: "SandboxFS", dependencies: [
            "DataProtection", "CFuse", "CLinux",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "Control", dependencies: ["DataProtection", "ItemStore", "CLinux"]),
        .target(name: "Security", dependencies: ["Control", "ItemStore"]),
        .executableTarget(name: "dpfs", dependencies: [
            "DataProtection", "SandboxFS", "Control", "ItemStore",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Runnable keychain examples (README, Tests/scenarios/examples_keychain.sh).
        .target(name: "ExampleSupport", dependencies: ["Security"], path: "Sources/Examples/Support"),
        .executableTarget(name: "ExampleKeychainPassword", dependencies: ["Security", "ExampleSupport"],
                          path: "Sources/Examples/KeychainPassword"),
        .executableTarget(name: "ExampleSharedAccessGroup", dependencies: ["Security", "ExampleSupport"],
                          path: "Sources/Examples/SharedAccessGroup"),
        .executableTarget(name: "ExampleSynchronizableItem", dependencies: ["Security", "ExampleSupport"],
                          path: "Sources/Examples/SynchronizableItem"),
        .testTarget(name: "DataProtectionTests", dependencies: ["DataProtection"]),
        .testTarget(name: "ItemStoreTests", dependencies: ["ItemStore", "DataProtection"]),
        // Drives a real mount through the dpfs binary that `swift test` builds.
        .testTarget(name: "SecurityTests", dependencies: ["Security"]),
    ],
    swiftLanguageModes: [.v6]
)
