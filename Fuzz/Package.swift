// swift-tools-version:6.0
// libFuzzer targets for dpfs's parsers, kept out of the main build.
// Build: swift build --package-path Fuzz -c release -Xswiftc -sanitize=fuzzer
// Run:   Scripts/fuzz [SECONDS]
import PackageDescription

let package = Package(
    name: "dpfs-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "dpfs", path: "..")],
    targets: [
        .executableTarget(
            name: "FuzzParsers",
            dependencies: [
                .product(name: "DataProtection", package: "dpfs"),
                .product(name: "DPFSProtocol", package: "dpfs"),
            ],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
