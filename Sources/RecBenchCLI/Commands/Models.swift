import ArgumentParser
import Foundation
import RecBenchCore

public struct Models: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        abstract: "List the registered models, one line each, with their hyperparameters.")

    @Flag(help: "Also list each model's hyperparameters with defaults.")
    public var parameters = false

    @Flag(help: "Print each model's defaults file (Configs/models/<Model>.yml: documentation of the compiled-in defaults) instead of the list.")
    public var defaults = false

    @Option(help: "With --defaults: write the files into this folder (atomically) instead of printing them.")
    public var write: String?

    @Flag(help: "Print README's model table (Markdown), generated from the registry.")
    public var markdown = false

    public func validate() throws {
        if write != nil && !defaults { throw ValidationError("--write needs --defaults") }
        if markdown && (defaults || parameters) { throw ValidationError("--markdown prints the table alone: drop --defaults and --parameters") }
    }

    public func run() throws {
        if markdown { return Terminal.out(ModelRegistry.markdownTable()) }
        if defaults {
            try reportingErrors {
                for model in ModelRegistry.models {
                    let text = ModelRegistry.defaultsFile(for: model)
                    if let folder = write {
                        try AtomicWrite.write(Data(text.utf8), to: "\(folder)/\(model.name).yml")
                    } else {
                        Terminal.out("# --- \(model.name).yml\n" + text.dropLast())
                    }
                }
            }
            return
        }
        let width = ModelRegistry.models.map { $0.name.count }.max() ?? 0
        for model in ModelRegistry.models {
            Terminal.out(model.name.padding(toLength: width + 2, withPad: " ", startingAt: 0)
                         + model.kind.rawValue.padding(toLength: 15, withPad: " ", startingAt: 0) + model.summary)
            if parameters {
                for p in model.parameters {
                    Terminal.out("    \(p.name): \(p.defaultValue)  (\(p.type)) \(p.summary)")
                }
            }
        }
    }
}
