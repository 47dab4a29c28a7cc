import ArgumentParser
import Foundation
import RecBenchCore

public struct ReportCommand: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Tabulate a folder of results (Markdown, CSV, JSON, LaTeX or an HTML page with charts).",
        discussion: """
            Groups runs by dataset and history mask; one row per run (or, with --over-seeds, \
            per setting) with recall, mrr, ndcg, \
            hit and precision at the cutoff, the repeat-vs-new analyses and coverage, the model \
            type and seconds. Best values are bold (md, latex, html). --significance adds \
            pairwise paired tests on per-user values; --overlap how alike the runs' test top-K lists \
            are (the lists `run --save-lists` writes). --over-seeds gives a model's runs that \
            differ only in `seed` one row: each value their mean ± the sample standard deviation \
            (a sweep with --set seed=2020,2021,2022 makes such runs).
            """)

    public enum Format: String, ExpressibleByArgument, CaseIterable { case md, csv, json, latex, html }
    public enum Test: String, ExpressibleByArgument, CaseIterable { case t, wilcoxon }

    @Argument(help: "The results folder.")
    public var directory = "results"

    @Option(help: "Output format.")
    public var format: Format = .md

    @Option(help: "Sort key (a test metric or analysis), e.g. ndcg@10; descending.")
    public var sort: String?

    @Option(help: "The cutoff K of the columns (default: the smallest in the results).")
    public var k: Int?

    @Option(name: .shortAndLong, help: "Write to this file (atomically) instead of stdout.")
    public var output: String?

    @Option(help: "Add pairwise significance tests on per-user values of this metric, e.g. ndcg@10 (md and html output).")
    public var significance: String?

    @Option(help: "The paired test for --significance.")
    public var test: Test = .t

    @Option(help: "Multiple-testing correction for --significance.")
    public var correction: Significance.Correction = .holm

    @Flag(help: "One row per model and setting: runs that differ only in `seed` averaged (mean ± sample standard deviation).")
    public var overSeeds = false

    @Flag(help: ArgumentHelp("Add each group's pairwise overlap of the runs' test top-K lists (mean Jaccard over the users both ranked), "
                             + "from the lists `run --save-lists` or `sweep --save-lists` wrote (md and html output)."))
    public var overlap = false

    public func run() throws {
        try reportingErrors {
            if significance != nil {
                try checkMatrixRequest("--significance", holding: "the tests", pairing: "pair one run's per-user values", again: "--significance …")
            }
            if overlap { try checkMatrixRequest("--overlap", holding: "the overlaps", pairing: "compare one run's lists", again: "--overlap") }
            let report = try Report.load(directory: directory, k: k, sortKey: sort, overSeeds: overSeeds)
            var text: String
            switch format {
            case .md: text = report.markdown()
            case .csv: text = report.csv()
            case .json: text = try report.json()
            case .latex: text = report.latex()
            case .html: text = report.html()
            }
            if let metric = significance?.lowercased() {
                let comparisons = try report.significance(metric: metric, test: test.rawValue, correction: correction)
                let tests = Report.markdown(comparisons, metric: metric, test: test.rawValue, correction: correction)
                text = format == .html ? Self.insert(tests, titled: "Significance", into: text) : text + "\n" + tests
            }
            if overlap {
                let overlaps = try report.overlaps()
                guard !overlaps.isEmpty else {
                    throw RecBenchError(field: "--overlap", "no group of \(directory) holds two runs with ranked lists: write them with "
                                        + "`recbench run … --save-lists` or `recbench sweep … --save-lists`")
                }
                let tables = report.markdown(overlaps)
                text = format == .html ? Self.insert(tables, titled: "Overlap of the lists", into: text) : text + "\n" + tables
            }
            if let output {
                try AtomicWrite.write(Data(text.utf8), to: output)
                Terminal.out(output)
            } else {
                Terminal.out(text.hasSuffix("\n") ? String(text.dropLast()) : text)
            }
        }
    }
}

extension ReportCommand {
    /// --significance and --overlap add matrices of single runs against each other, which only md and html reports hold.
    func checkMatrixRequest(_ flag: String, holding what: String, pairing: String, again: String) throws {
        if format != .md && format != .html {
            throw RecBenchError(field: flag, "md and html reports hold \(what); a \(format.rawValue) report is one table: "
                                + "write \(what) with a second `report --format md \(again)`")
        }
        if overSeeds {
            throw RecBenchError(field: flag, "\(what) \(pairing) with another's; a row of --over-seeds is a mean over runs: "
                                + "write \(what) with a second `report` without --over-seeds")
        }
    }

    /// Markdown (tests, overlaps) as a preformatted section at the end of the page's body.
    static func insert(_ markdown: String, titled title: String, into page: String) -> String {
        let escaped = markdown.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
        let section = "<section><h2>\(title)</h2><pre>\(escaped)</pre></section>\n"
        guard let end = page.range(of: "</body>", options: .backwards) else { return page + section }
        return page.replacingCharacters(in: end.lowerBound..<end.lowerBound, with: section)
    }
}

extension Significance.Correction: ExpressibleByArgument {}
