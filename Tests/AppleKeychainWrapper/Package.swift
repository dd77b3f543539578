// swift-tools-version:6.0
// A fixture: ordinary Apple-platform keychain code, built on Linux against dpfs's
// Security library with not one `#if os(Linux)`. On Apple platforms the condition
// leaves the product out and `import Security` is the system framework.
// Built and tested inside a mounted device by Tests/scenarios/external_package.sh.
import PackageDescription

let package = Package(
    name: "AppleKeychainWrapper",
    platforms: [.macOS(.v15), .iOS(.v17)],
    dependencies: [
        .package(name: "dpfs", path: "../.."),
    ],
    targets: [
        .target(name: "KeychainWrapper", dependencies: [
            .product(name: "Security", package: "dpfs", condition: .when(platforms: [.linux])),
        ]),
        .testTarget(name: "KeychainWrapperTests", dependencies: ["KeychainWrapper"]),
    ]
)
