// swift-tools-version:6.0
// Hash throughput of recbench's own SHA-256 (the file itself, linked) against swift-crypto's,
// and what swift-crypto costs a clean build: docs/performance.md, "Hashing the input".
//   cd scripts/sha256-vs-swift-crypto && rm -rf .build && time swift build -c release && .build/release/cb
import PackageDescription
let package = Package(
    name: "cb",
    dependencies: [.package(url: "https://github.com/apple/swift-crypto", from: "4.5.2")],
    targets: [.executableTarget(name: "cb", dependencies: [.product(name: "Crypto", package: "swift-crypto")], path: "Sources/cb")]
)
