import ArgumentParser
import Foundation
import RecBenchCore
import RecBenchBench

public struct Sample: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        abstract: "Write a deterministic synthetic dataset: the Mart-like grocery sample (CSV), or a log of any size (--shape, --interactions).",
        discussion: """
            Without --shape or --interactions: the generator behind Datasets/mart-sample/, \
            weekly grocery baskets with staples bought again and again, 14 categories and a \
            long tail, as CSV exports to convert with `recbench convert`. \
            With --shape ml-20m (or ml-1m, ml-100k) or --interactions N: an atomic file \
            <out>/<name>/<name>.inter of that many users, items and rows, with log-normal user \
            activity, power-law item popularity, increasing timestamps per user and 5 % repeat \
            consumption, written while it is generated (memory does not grow with the rows). \
            --users and --items override the shape's sizes. The same options give the same bytes.
            """)

    @Option(help: "Output folder (default: Datasets/mart-sample/csv for the Mart sample, dataset for a sized log).")
    public var out: String?

    @Option(help: ArgumentHelp("A named size: ml-20m (138,493 users × 26,744 items × 20,000,263 rows), ml-1m or ml-100k.", valueName: "shape"))
    public var shape: String?

    @Option(help: "Rows of a sized log (with --users and --items, or over --shape's).")
    public var interactions: Int?

    @Option(help: "Dataset name of a sized log (default: <shape>-synthetic, or synthetic-<users>x<items>x<rows>).")
    public var name: String?

    @Option(help: "Number of users (Mart sample default 2000).")
    public var users: Int?

    @Option(help: "Number of items (Mart sample default 2000).")
    public var items: Int?

    @Option(help: "Number of weeks (Mart sample).")
    public var weeks = 12

    @Option(help: "Seed.")
    public var seed: UInt64 = 2024

    public func validate() throws {
        if let shape, ScaleSample.Shape.named[shape] == nil {
            throw ValidationError("unknown --shape '\(shape)' (shapes: \(ScaleSample.Shape.named.keys.sorted().joined(separator: ", ")))")
        }
        for (flag, value) in [("--users", users), ("--items", items), ("--interactions", interactions), ("--weeks", weeks)] {
            if let value, value < 1 { throw ValidationError("\(flag) must be at least 1, not \(value)") }
        }
        if shape == nil, interactions != nil, users == nil || items == nil {
            throw ValidationError("--interactions without --shape needs --users and --items")
        }
    }

    public func run() throws {
        try reportingErrors {
            if shape != nil || interactions != nil { try writeSizedLog() } else { try writeMartSample() }
        }
    }

    /// A sized log as one streamed atomic file.
    func writeSizedLog() throws {
        var size = shape.flatMap { ScaleSample.Shape.named[$0] } ?? ScaleSample.Shape(users: users!, items: items!, interactions: interactions!)
        if let users { size.users = users }
        if let items { size.items = items }
        if let interactions { size.interactions = interactions }
        size.seed = seed
        let dataset = name ?? shape.map { "\($0)-synthetic" } ?? "synthetic-\(size.users)x\(size.items)x\(size.interactions)"
        let folder = out ?? "dataset"
        let path = "\(folder)/\(dataset)/\(dataset).inter"
        let start = ContinuousClock.now
        let rows = try ScaleSample(shape: size).write(to: path)
        let seconds = (ContinuousClock.now - start).seconds
        Terminal.out("\(path)  (\(rows) rows, \(size.users) users × \(size.items) items, \(String(format: "%.1f", seconds)) s, "
                     + "\(String(format: "%.1f", Double(rows) / seconds / 1e6)) M rows/s)")
        Terminal.out("run on it: recbench run --model EASE --set data_path=\(folder) --set dataset=\(dataset) "
                     + "--set 'load_col={inter: [user_id, item_id, timestamp]}'")
    }

    /// The Mart-like grocery sample as CSV exports.
    func writeMartSample() throws {
        var shape = MartSample.Shape()
        shape.users = users ?? 2_000; shape.items = items ?? 2_000; shape.weeks = weeks; shape.seed = seed
        let sample = MartSample(shape: shape)
        let folder = out ?? "Datasets/mart-sample/csv"
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch { throw RecBenchError.file(folder, "cannot create the folder") }
        for (file, text) in [("interact.csv", sample.interactions), ("items.csv", sample.items), ("users.csv", sample.users)] {
            try AtomicWrite.write(Data(text.utf8), to: "\(folder)/\(file)")
            Terminal.out("\(folder)/\(file)  (\(text.split(separator: "\n").count - 1) rows)")
        }
    }
}
