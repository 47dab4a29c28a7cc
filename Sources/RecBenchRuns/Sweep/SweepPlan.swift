import Foundation
import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation
import RecBenchModels

/// One run of a sweep: a model and the settings that make it, with its identity.
public struct SweepRun: Sendable, Equatable {
    /// Registry name of the model.
    public let model: String
    /// The dataset name.
    public let dataset: String
    /// `key=value` assignments for this run (fixed ones first, then its grid point).
    public let assignments: [String]
    /// Short human label, e.g. "ItemKNN k=50".
    public let label: String
    /// The run's identity (see `Experiment.runKey`).
    public let runKey: String
    /// The files it writes: its record once it finished, its failure record if it failed.
    public let files: RunFiles
    /// The fingerprint of the data it reads.
    public var datasetFingerprint = ""
    /// A search of the model's declared space with this budget, whose test run is the run
    /// (`sweep --tune`); nil: the run with the settings as given.
    public var tune: TuneBudget? = nil
    /// Whether the run ranks (not `eval_args.mode: labeled`): only a ranking has lists to write.
    public var ranks = true
}

/// What every model of a tuned sweep gets: the same number of trials or the same seconds.
public struct TuneBudget: Sendable, Equatable {
    public var trials: Int?
    public var seconds: Double?

    public init(trials: Int?, seconds: Double?) { self.trials = trials; self.seconds = seconds }
}

/// Every (model, setting) combination of a sweep, in a fixed order, validated up front.
public struct SweepPlan: Sendable {
    /// The runs, in execution order, without duplicates (two settings that resolve to the
    /// same run key are one run).
    public let runs: [SweepRun]
    /// Notes for the user (models added, duplicates dropped).
    public let notices: [String]
}

/// Sweep planning: grids from `--set key=a,b,c`, models, run keys.
public enum SweepPlanner {
    /// Splits a grid value on top-level commas: `10,20` → [10, 20]; `[10,20],[5]` →
    /// ["[10,20]", "[5]"]; `[10,20]` stays one value.
    public static func gridValues(_ text: String) -> [String] {
        var parts: [String] = [], current = "", depth = 0
        var quote: Character?
        for ch in text {
            if let q = quote {
                if ch == q { quote = nil }
            } else if ch == "\"" || ch == "'" {
                quote = ch
            } else if ch == "[" || ch == "{" {
                depth += 1
            } else if ch == "]" || ch == "}" {
                depth -= 1
            } else if ch == "," && depth == 0 {
                parts.append(current.trimmingCharacters(in: .whitespaces)); current = ""; continue
            }
            current.append(ch)
        }
        parts.append(current.trimmingCharacters(in: .whitespaces))
        return parts
    }

    /// Plans a sweep of `models` (empty: every registered model) over the grid in
    /// `assignments`. Every run is planned (so a bad key fails now, not at 3 a.m.).
    public static func plan(models requested: [String], configFiles: [String], assignments: [String],
                            dataset: String? = nil, tune: TuneBudget? = nil) throws -> SweepPlan {
        var notices: [String] = []
        var models = try requested.map { try ModelRegistry.model(named: $0).name }
        if models.isEmpty { models = ModelRegistry.models.map { $0.name } }

        // Fixed assignments and grid dimensions, in command-line order.
        var fixed: [String] = []
        var grid: [(key: String, values: [String])] = []
        for assignment in assignments {
            guard let eq = assignment.firstIndex(of: "=") else {
                throw RecBenchError(location: "--set", "expected key=value, got '\(assignment)'")
            }
            let key = String(assignment[..<eq]), values = gridValues(String(assignment[assignment.index(after: eq)...]))
            if values.count > 1 { grid.append((key, values)) } else { fixed.append(assignment) }
        }
        var points: [[String]] = [[]]
        for dimension in grid {
            points = points.flatMap { point in dimension.values.map { point + ["\(dimension.key)=\($0)"] } }
        }

        try addBaselinesOrKeepLabeled(&models, every: requested.isEmpty, configFiles: configFiles, fixed: fixed, dataset: dataset, notices: &notices)

        var fingerprints: [DataSettings: String] = [:]
        var runs: [SweepRun] = []
        var seen = Set<String>()
        for model in models {
            for point in points {
                let request = RunRequest(model: model, configFiles: configFiles, assignments: fixed + point, dataset: dataset)
                let plan = try Experiment.plan(request)
                let fingerprint = try fingerprints[plan.data] ?? DatasetLoader.fingerprint(plan.data)
                fingerprints[plan.data] = fingerprint
                let key = Experiment.runKey(plan: plan, datasetFingerprint: fingerprint)
                // A grid key this model does not use gives the same run again: keep one.
                guard seen.insert(key).inserted else { continue }
                let used = point.filter { assignment in
                    let name = String(assignment.prefix { $0 != "=" }).split(separator: ".").first.map(String.init) ?? ""
                    let current = DeprecatedKeys.negativeSamplingAliases.contains(name) ? "train_neg_sample_args" : name
                    return plan.config.values[current] != nil
                }
                let files = RunFiles(root: plan.resultsDirectory, dataset: plan.data.dataset, model: model, runKey: key)
                var run = SweepRun(model: model, dataset: plan.data.dataset, assignments: fixed + point, label: ([model] + used).joined(separator: " "),
                                   runKey: key, files: files)
                run.datasetFingerprint = fingerprint
                run.ranks = !plan.evaluation.isLabeled
                runs.append(run)
                if let tune, let tuned = tunedRun(of: run, plan: plan, budget: tune, notices: &notices), seen.insert(tuned.runKey).inserted {
                    runs.append(tuned)
                }
            }
        }
        return SweepPlan(runs: runs, notices: notices)
    }

    /// The tuned counterpart of `run`: a search of the model's declared space (TPE, median
    /// pruner, the sweep's budget), identified by its search; nil for a model without a space.
    static func tunedRun(of run: SweepRun, plan: ExperimentPlan, budget: TuneBudget, notices: inout [String]) -> SweepRun? {
        guard let space = try? Search.defaultSpace(plan.modelType) else {
            if !notices.contains(where: { $0.hasPrefix("\(run.model) has no search space") }) {
                notices.append("\(run.model) has no search space: it runs with its settings only")
            }
            return nil
        }
        let request = SearchRequest(run: RunRequest(), space: space, sampler: TPESampler(), pruner: MedianPruner(), trials: budget.trials,
                                    budgetSeconds: budget.seconds)
        let searchKey = Search.searchKey(plan, space: space, request: request, fingerprint: run.datasetFingerprint)
        let key = Search.tunedRunKey(searchKey: searchKey, trials: budget.trials, budgetSeconds: budget.seconds)
        let limit = [budget.trials.map { "\($0) trials" }, budget.seconds.map { "\(Int($0)) s" }].compactMap { $0 }.joined(separator: ", ")
        var tuned = SweepRun(model: run.model, dataset: run.dataset, assignments: run.assignments, label: "\(run.label) (tuned: \(limit))",
                             runKey: key, files: RunFiles(root: plan.resultsDirectory, dataset: run.dataset, model: run.model, runKey: key))
        tuned.datasetFingerprint = run.datasetFingerprint
        tuned.tune = budget
        return tuned
    }

    /// On repeat data the repeat baselines join the sweep; under labelled evaluation, which ranks nothing, they do not,
    /// and a sweep of every model keeps the context-aware ones (the only ones that score a row's probability).
    static func addBaselinesOrKeepLabeled(_ models: inout [String], every: Bool, configFiles: [String], fixed: [String], dataset: String?,
                                          notices: inout [String]) throws {
        func contextAware(_ name: String) -> Bool { (try? ModelRegistry.model(named: name))?.family == .contextAware }
        let request = RunRequest(model: models.first(where: contextAware) ?? models[0], configFiles: configFiles, assignments: fixed, dataset: dataset)
        if try Experiment.plan(request).evaluation.isLabeled {
            if every {
                models = models.filter(contextAware)
                notices.append("eval_args.mode is labeled: the sweep runs the \(models.count) context-aware models")
            }
            return
        }
        let baselines = ModelRegistry.models.filter { $0.role == .repeatBaseline && !models.contains($0.name) }
        if let first = baselines.first, try hasRepeats(model: first.name, configFiles: configFiles, assignments: fixed, dataset: dataset) {
            for baseline in baselines {
                models.append(baseline.name)
                notices.append("the data has repeat purchases: \(baseline.name) joins the sweep as the repeat baseline")
            }
        }
    }

    /// Whether the test split contains items its users had before (repeat consumption).
    static func hasRepeats(model: String, configFiles: [String], assignments: [String], dataset: String?) throws -> Bool {
        let plan = try Experiment.plan(RunRequest(model: model, configFiles: configFiles, assignments: assignments, dataset: dataset))
        let d = try DatasetLoader.load(plan.data)
        let split = SplitData(dataset: d, parts: try Splitter.split(d.interactions, userCount: d.userCount, settings: plan.split))
        return EvaluationTarget(.test, in: split).repeatPositives > 0
    }

    /// The mean total seconds of the stored runs of the same model on the same data (any
    /// settings) in the run's results folder: the run's expected time, nil when there is none.
    public static func previousSeconds(_ run: SweepRun) -> Double? {
        let folder = (run.files.record as NSString).deletingLastPathComponent
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        let seconds = files.filter { $0.hasPrefix("\(run.model)-") && RunFiles.kind(of: $0) == .record }.compactMap { file -> Double? in
            guard let data = FileManager.default.contents(atPath: "\(folder)/\(file)"),
                  let result = try? JSONDecoder().decode(RunResult.self, from: data),
                  result.model == run.model, result.datasetFingerprint == run.datasetFingerprint else { return nil }
            return result.seconds["total"]
        }
        return seconds.isEmpty ? nil : seconds.reduce(0, +) / Double(seconds.count)
    }

    /// Whether the run has a stored result with its key.
    public static func isDone(_ run: SweepRun) -> Bool {
        guard let data = FileManager.default.contents(atPath: run.files.record),
              let result = try? JSONDecoder().decode(RunResult.self, from: data) else { return false }
        return result.runKey == run.runKey
    }
}

extension Shard {
    /// This shard's runs of `runs` (the whole plan, in order).
    public func runs(of runs: [SweepRun]) -> [SweepRun] {
        runs.enumerated().filter { Shard.of(position: $0.offset, count: count) == index }.map(\.element)
    }
}
