// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "recbench",
    products: [
        .executable(name: "recbench", targets: ["recbench"]),
        .library(name: "RecBenchCore", targets: ["RecBenchCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // OpenBLAS's cblas.h and LAPACKE's lapacke.h; installed by scripts/install-deps.sh.
        .systemLibrary(name: "CBLAS", path: "Sources/CBLAS"),
        // Header-only vector operations Swift's SIMD types lack (no library to link).
        .systemLibrary(name: "CLanes", path: "Sources/CLanes"),
        .target(
            name: "RecBenchCore",
            dependencies: [
                "CBLAS",
                "CLanes",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "recbench",
            dependencies: [
                "RecBenchCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "RecBenchCoreTests", dependencies: ["RecBenchCore"]),
        // Runs the built `recbench` binary as a user would; depends on it so it is built first.
        .testTarget(name: "RecBenchCLITests", dependencies: ["recbench", "RecBenchCore"]),
    ]
)
