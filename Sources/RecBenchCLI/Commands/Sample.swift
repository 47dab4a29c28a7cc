import ArgumentParser
import Foundation
import RecBenchCore

public struct Sample: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        abstract: "Write the deterministic Mart-like sample as CSV exports (interact.csv, items.csv, users.csv).",
        discussion: """
            The generator behind Datasets/mart-sample/: weekly grocery baskets with staples \
            bought again and again, 14 categories and a long tail. The same options give the \
            same bytes. Convert the result with `recbench convert`.
            """)

    @Option(help: "Output folder.")
    public var out = "Datasets/mart-sample/csv"

    @Option(help: "Number of users.")
    public var users = 2_000

    @Option(help: "Number of items.")
    public var items = 2_000

    @Option(help: "Number of weeks.")
    public var weeks = 12

    @Option(help: "Seed.")
    public var seed: UInt64 = 2024

    public func run() throws {
        try reportingErrors {
            var shape = MartSample.Shape()
            shape.users = users; shape.items = items; shape.weeks = weeks; shape.seed = seed
            let sample = MartSample(shape: shape)
            do {
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            } catch { throw RecBenchError.file(out, "cannot create the folder") }
            for (file, text) in [("interact.csv", sample.interactions), ("items.csv", sample.items), ("users.csv", sample.users)] {
                try AtomicWrite.write(Data(text.utf8), to: "\(out)/\(file)")
                Terminal.out("\(out)/\(file)  (\(text.split(separator: "\n").count - 1) rows)")
            }
        }
    }
}
