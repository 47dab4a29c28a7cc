import ArgumentParser
import RecBenchCore

/// The options that say what to run, shared by `run` and `sweep`.
public struct ExperimentOptions: ParsableArguments {
    public init() {}

    @Option(name: .shortAndLong, help: "A YAML config file; repeat to layer several.")
    public var config: [String] = []

    @Option(name: [.customLong("set"), .customShort("s")],
            help: ArgumentHelp("Override a config key, e.g. --set topk=[10,20] or --set eval_args.order=TO; in a sweep, key=a,b,c is a grid.",
                               valueName: "key=value"))
    public var assignments: [String] = []

    @Option(help: "Dataset name (overrides the config's `dataset`).")
    public var dataset: String?
}
