import ArgumentParser
import Foundation
import RecBenchCore

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure EASE fit, full evaluation and a whole `recbench run` against references measured in the same run.",
        discussion: """
            Build with `swift build -c release` and keep the machine otherwise idle. Reports \
            best-of-N seconds and ratios: against LAPACK's Cholesky inverse and a dense sgemm \
            measured in this run, against the peaks in BLAS-NOTES, and (for the whole process) \
            against RecBole 1.2.1's 4.8 s for EASE on ml-100k from the shared reference.
            """)

    @Option(help: "Config of the real-data benchmark.")
    var config = "Configs/ml-100k.yml"

    @Option(help: "Items of the synthetic catalogue (0 skips it).")
    var items = 20_000

    @Option(help: "Users of the synthetic dataset.")
    var users = 25_000

    @Option(help: "Mean distinct items per synthetic user.")
    var meanHistory = 40

    @Option(help: "Repeats per measurement on the real data (best is kept).")
    var repeats = 5

    @Option(help: "Whole-process runs of `recbench run --model EASE` (best is kept).")
    var processRuns = 5

    @Flag(help: "Print the rows as JSON.")
    var json = false

    @OptionGroup var logging: LoggingOptions

    func run() throws {
        let logger = logging.makeLogger()
        try reportingErrors {
            var rows: [BenchmarkRow] = []
            // 1. Whole process, first, on a cold-ish machine.
            var best = Double.infinity, rss = 0.0
            for _ in 0..<processRuns {
                let (seconds, maxRSS, status) = try ChildProcess.run(ChildProcess.selfPath, ["run", "--model", "EASE", "--config", config, "--no-save", "--quiet"])
                guard status == 0 else { throw RecBenchError(location: config, "`recbench run --model EASE` failed (exit \(status))") }
                best = min(best, seconds); rss = max(rss, maxRSS)
            }
            rows.append(BenchmarkRow(step: "recbench run --model EASE (whole process, peak RSS \(Int(rss)) MiB)", seconds: best,
                                     reference: "RecBole 1.2.1 process wall, shared reference §C (RSS 1288 MiB)", referenceSeconds: 4.8, target: 0.5 / 4.8))
            // 2. EASE on the configured real data.
            let plan = try Experiment.plan(RunRequest(model: "EASE", configFiles: [config]))
            let dataset = try DatasetLoader.load(plan.data)
            rows += try EASEBenchmark.run(dataset: dataset, repeats: repeats, logger: logger)
            // 3. EASE on a synthetic catalogue.
            if items > 0 {
                let synthetic = SyntheticData.zipf(users: users, items: items, meanHistory: meanHistory, seed: 2020)
                logger.notice("synthetic: \(synthetic.userCount) users, \(synthetic.itemCount) items, \(synthetic.interactions.count) interactions")
                rows += try EASEBenchmark.run(dataset: synthetic, repeats: 1, logger: logger)
            }
            rows.append(BenchmarkRow(step: "peak RSS of this benchmark process (MiB)", seconds: ProcessStats.peakMemoryMiB,
                                     reference: "–", referenceSeconds: .nan, target: nil))
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
                Terminal.out(String(decoding: try encoder.encode(rows), as: UTF8.self))
            } else {
                Terminal.out("recbench bench · BLAS threads \(BLAS.threadCount) · cores \(ProcessStats.coreCount) · \(BLAS.configuration)")
                Terminal.out("| step | seconds | compared with | their seconds | ratio | target |")
                Terminal.out("|---|---|---|---|---|---|")
                for r in rows {
                    let ratio = r.referenceSeconds.isNaN ? "–" : String(format: "%.2f×", r.ratio)
                    let target = r.target.map { String(format: "≤ %.2f×", $0) + (r.ratio <= $0 ? " ✓" : " ✗") } ?? ""
                    let theirs = r.referenceSeconds.isNaN ? "–" : String(format: "%.4f", r.referenceSeconds)
                    Terminal.out("| \(r.step) | \(String(format: "%.4f", r.seconds)) | \(r.reference) | \(theirs) | \(ratio) | \(target) |")
                }
            }
        }
    }
}
