// swift-tools-version:6.0
import PackageDescription

/// Cross-module optimisation: small functions of a lower layer inline into the hot loops of
/// the layers above, as they did when they shared one module.
let cmo: [SwiftSetting] = [.unsafeFlags(["-cross-module-optimization"])]

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
        // The product's layers, one target each in data-flow order (README "Architecture"); a
        // target imports only the ones before it. Each crosses into the next through small
        // functions in hot loops, so each is built for cross-module optimisation.
        // Errors, atomic writes, hashing, process statistics.
        .target(name: "RecBenchSupport", swiftSettings: cmo),
        // Config (layered YAML, documented keys), atomic files, datasets, splits, CSV conversion.
        .target(name: "RecBenchData", dependencies: ["RecBenchSupport", "Linalg", .product(name: "Yams", package: "Yams")],
                swiftSettings: cmo),
        // What a model is: Recommender, Scorer, FitContext, parameters, costs.
        .target(name: "RecBenchContract", dependencies: ["RecBenchData", "RecBenchSupport", "Linalg", .product(name: "Logging", package: "swift-log")],
                swiftSettings: cmo),
        // Metrics, history mask, full-ranking evaluation: the contract and the data, no training.
        .target(name: "RecBenchEvaluation", dependencies: ["RecBenchContract", "RecBenchData", "RecBenchSupport", "Linalg"], swiftSettings: cmo),
        // Training machinery (optimisers, trainer, samplers) and the models, by family; the registry.
        .target(name: "RecBenchModels",
                dependencies: ["RecBenchContract", "RecBenchData", "RecBenchSupport", "Linalg", "Autodiff",
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: cmo),
        // A run's life: plan → load → split → fit → evaluate → record; sweeps; reports.
        .target(name: "RecBenchRuns",
                dependencies: ["RecBenchModels", "RecBenchEvaluation", "RecBenchContract", "RecBenchData", "RecBenchSupport", "Linalg",
                               .product(name: "Logging", package: "swift-log")],
                swiftSettings: cmo),
        // The product's library: every layer above, re-exported.
        .target(name: "RecBenchCore",
                dependencies: ["RecBenchRuns", "RecBenchModels", "RecBenchEvaluation", "RecBenchContract", "RecBenchData", "RecBenchSupport", "Linalg"]),
        // recbench's self-benchmark (`recbench bench`): host peaks, the synthetic scale data, the
        // reference file. The product's core does not depend on it.
        .target(name: "RecBenchBench", dependencies: ["RecBenchCore", "Linalg", .product(name: "Logging", package: "swift-log")]),
        // The commands (swift-argument-parser), a library so tests can parse without a process.
        .target(
            name: "RecBenchCLI",
            dependencies: [
                "RecBenchCore",
                "RecBenchBench",
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
        .testTarget(name: "RecBenchCoreTests", dependencies: ["RecBenchCore", "RecBenchBench", "Linalg", "Autodiff"]),
        // Runs the built `recbench` binary as a user would; depends on it so it is built first.
        .testTarget(name: "RecBenchCLITests", dependencies: ["recbench", "RecBenchCLI", "RecBenchCore", "RecBenchBench", "Linalg"]),
    ]
)
