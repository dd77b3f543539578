// swift-tools-version:6.0
// A fixture: ordinary Apple-platform code that keeps a secret behind Face ID
// (SecAccessControl, LAContext), built on Linux against dpfs's Security and
// LocalAuthentication libraries with not one `#if os(Linux)`. On Apple platforms the
// conditions leave dpfs's products out and the system frameworks are used. Its tests
// play the user through DataProtectionKit's DeviceControl where that exists.
// Built and tested inside a mounted device by Tests/scenarios/external_biometry.sh.
import PackageDescription

let package = Package(
    name: "AppleBiometricWrapper",
    platforms: [.macOS(.v15), .iOS(.v17)],
    dependencies: [
        .package(name: "dpfs", path: "../.."),
    ],
    targets: [
        .target(name: "BiometricVault", dependencies: [
            .product(name: "Security", package: "dpfs", condition: .when(platforms: [.linux])),
            .product(name: "LocalAuthentication", package: "dpfs", condition: .when(platforms: [.linux])),
        ]),
        .testTarget(name: "BiometricVaultTests", dependencies: [
            "BiometricVault",
            .product(name: "DataProtectionKit", package: "dpfs", condition: .when(platforms: [.linux])),
        ]),
    ]
)
