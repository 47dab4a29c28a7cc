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
        // Layer 1: dense and sparse matrices, BLAS/LAPACK, vector kernels, parallel loops,
        // top-K, seeded RNG. The only target that imports the C modules. Its kernels are
        // small functions called in hot loops of the layers above: cross-module optimisation
        // lets the compiler inline them there as it did when they shared one module.
        .target(
            name: "Linalg",
            dependencies: ["CBLAS", "CLanes"],
            swiftSettings: [.unsafeFlags(["-cross-module-optimization"])]
        ),
        // Layer 2: reverse-mode autodiff over Linalg's matrices (Variable, Tape, ops).
        .target(
            name: "Autodiff",
            dependencies: ["Linalg"],
            swiftSettings: [.unsafeFlags(["-cross-module-optimization"])]
        ),
        // Layers 3+: config, data, the model contract, training, models, evaluation,
        // results, experiments (folders in that order; README "Architecture").
        .target(
            name: "RecBenchCore",
            dependencies: [
                "Linalg",
                "Autodiff",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The commands (swift-argument-parser), a library so tests can parse without a process.
        .target(
            name: "RecBenchCLI",
            dependencies: [
                "RecBenchCore",
                "Linalg",
                "Autodiff",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The binary: process set-up, then the commands.
        .executableTarget(name: "recbench", dependencies: ["RecBenchCLI"]),
        // libFuzzer targets for the readers of untrusted input (scripts/fuzz.sh); a plain
        // build is a replayer of saved inputs.
        .executableTarget(name: "recbench-fuzz", dependencies: ["RecBenchCore"], path: "Tests/Fuzz"),
        .testTarget(name: "RecBenchCoreTests", dependencies: ["RecBenchCore", "Linalg", "Autodiff"]),
        // Runs the built `recbench` binary as a user would; depends on it so it is built first.
        .testTarget(name: "RecBenchCLITests", dependencies: ["recbench", "RecBenchCLI", "RecBenchCore", "Linalg"]),
    ]
)
