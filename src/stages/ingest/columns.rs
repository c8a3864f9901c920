//! What each column of a fixed-column format holds: one sentence per column, for the card's
//! column dictionary and the Table Schema's `description` (docs/formats.md has the same
//! tables).
//!
//! In: a format, the W&B standard table for `wandb` sources (`runs`, `history`, `system`,
//! `histograms`), and a column's name as the reader gives it. Out: the sentence, or `None` for
//! a column the format does not fix (a path capture, a plain format's column, an extra column
//! a pipeline declares).

use crate::core::spec::Format;

/// What `column` of a `format` source holds (`wandb_table`: the W&B standard table, for
/// `wandb` sources only).
pub fn description(format: Format, wandb_table: Option<&str>, column: &str) -> Option<&'static str> {
    use Format as F;
    if let Some(d) = provenance(format, column) {
        return Some(d);
    }
    Some(match (format, column) {
        // Tinker
        (F::TinkerMetrics, "step") => "The record's `step`: the 0-based batch index.",
        (F::TinkerMetrics, "metric") => "The metric's key, as logged (`env/all/reward/total`).",
        (F::VerlMetrics, "step") => {
            "The line's `step`: the trainer's global step (validation before training is logged at the step it starts from)."
        }
        (F::VerlMetrics, "metric") => {
            "The metric's key in the line's `data`, as logged (`actor/pg_loss`, `val-core/…`), or `elapsed_seconds`."
        }
        (F::TinkerMetrics | F::VerlMetrics, "value") => "The value, when it is a number (NaN and ±Infinity kept).",
        (F::TinkerMetrics | F::VerlMetrics, "value_text") => {
            "The value, when it is no number: a string as logged, the JSON text of a boolean, list or object, or the digits of an integer beyond ±2^53."
        }
        (F::TinkerCheckpoints, "name") => "The checkpoint's name (`000020`, `final`).",
        (F::TinkerCheckpoints, "batch") => "Optimizer steps completed when it was saved.",
        (F::TinkerCheckpoints, "epoch") => "The epoch, when the loop counts them.",
        (F::TinkerCheckpoints, "final") => "The record's `final` flag (the stock loops never set it).",
        (F::TinkerCheckpoints, "rolling") => "Whether it is a rolling checkpoint (deleted once the next is saved).",
        (F::TinkerCheckpoints, "state_path") => "`tinker://…/weights/<name>`: weights and optimizer state.",
        (F::TinkerCheckpoints, "sampler_path") => "`tinker://…/sampler_weights/<name>`: weights for sampling.",
        (F::TinkerCheckpoints, "extra") => "JSON text of the record's other keys.",

        // tinker-cookbook benchmark runner and eval store
        (F::TinkerEvalResult, "benchmark") => "The benchmark's name (`name` in the file).",
        (F::TinkerEvalResult, "score") => "The benchmark's score.",
        (F::TinkerEvalResult, "num_examples") => "Examples evaluated.",
        (F::TinkerEvalResult, "num_correct") => "Examples answered correctly.",
        (F::TinkerEvalResult, "num_errors") => "Examples whose evaluation failed.",
        (F::TinkerEvalResult, "num_truncated") => "Examples whose response was cut at the token limit.",
        (F::TinkerEvalResult | F::TinkerEvalTrajectories, "time_seconds") => "Wall time, in seconds.",
        (F::TinkerEvalResult | F::EvalMetrics, "pass_at_k") => {
            "pass@k for each k, as a list of `{k, value}` sorted by k."
        }
        (F::TinkerEvalResult | F::TinkerEvalTrajectories, "metrics") => "JSON text of the other metrics.",
        (F::TinkerEvalTrajectories, "idx") => "The trajectory's place in the file, as written.",
        (F::TinkerEvalTrajectories, "benchmark") => "The benchmark's name.",
        (F::TinkerEvalTrajectories, "example_id") => "The example's id (the text of `idx` in older files).",
        (F::TinkerEvalTrajectories, "reward") => "The trajectory's reward.",
        (F::TinkerEvalTrajectories, "correct") => "Whether the reward is above 0.",
        (F::TinkerEvalTrajectories, "error") => "The error's message; null when none.",
        (F::TinkerEvalTrajectories, "num_turns") => "Turns of the conversation.",
        (F::TinkerEvalTrajectories, "response_tokens") => "Tokens of the assistant turns, summed.",
        (F::TinkerEvalTrajectories, "text") => "The assistant turns, joined by blank lines.",
        (F::TinkerEvalRun, "run_id") => "The eval run's id.",
        (F::TinkerEvalRun, "model_name") => "The model evaluated.",
        (F::TinkerEvalRun, "checkpoint_path") => "The checkpoint evaluated (`tinker://…`).",
        (F::TinkerEvalRun, "checkpoint_name") => "The checkpoint's name.",
        (F::TinkerEvalRun, "benchmarks") => "The benchmarks the run evaluated.",
        (F::TinkerEvalRun, "timestamp") => "When the run was made (ISO 8601, as written).",
        (F::TinkerEvalRun, "config") => "JSON text of the run's configuration.",
        (F::TinkerEvalRun, "scores") => "JSON text of the run's scores, by benchmark.",

        // per-checkpoint evaluations
        (F::EvalMetrics, "checkpoint") => "The checkpoint evaluated, from the file's name.",
        (F::EvalMetrics, "split") => "`id` (in distribution), `ood` (out of distribution) or `total`.",
        (F::EvalMetrics, "answer_accuracy") => "Share of answers correct (0 to 1).",
        (F::EvalMetrics, "avg_response_len") => "Mean response length, in tokens.",
        (F::EvalMetrics, "avg_loss") => "Mean loss.",
        (F::EvalMetrics, "count") => "Examples evaluated.",
        (F::EvalGenerations, "example_id") => "The example's id (`__idx`).",
        (F::EvalGenerations, "op") => "The example's operation count.",
        (F::EvalGenerations, "template") => "The example's template.",
        (F::EvalGenerations, "exact_match") => "Whether the answer matched exactly (read from 0 and 1).",
        (F::EvalGenerations, "response_tokens") => "Tokens of the response (`resp_tokens`).",
        (F::EvalGenerations, "gold_answer") => "The expected answer.",
        (F::EvalGenerations, "gen_answer") => "The answer generated.",
        (F::EvalGenerations, "text") => "The generated solution (`gen_solution_answer`).",

        // tinker-cookbook run folders
        (F::TinkerTimings, "step") => "The training step.",
        (F::TinkerTimings, "span_index") => "The span's place in its line, from 0.",
        (F::TinkerTimings, "span") => "The span's name (`sample`, `train`, …).",
        (F::TinkerTimings, "duration") => "The span's duration, in seconds.",
        (F::TinkerTimings, "wall_start") => "When the span started, in seconds from the step's first span.",
        (F::TinkerTimings, "wall_end") => "When the span ended, in seconds from the step's first span.",
        (F::TinkerTimings, "extra") => "JSON text of the span's other keys.",
        (F::TinkerRollouts, "schema_version") => "The summary's schema version (1).",
        (F::TinkerRollouts | F::TinkerRolloutSteps, "iteration") => "The training iteration.",
        (F::TinkerRollouts | F::TinkerRolloutSteps, "group_idx") => "The trajectory's group in its iteration.",
        (F::TinkerRollouts | F::TinkerRolloutSteps, "traj_idx") => "The trajectory's place in its group.",
        (F::TinkerRollouts | F::TinkerRolloutSteps, "split") => "`train`, or `eval/<name>` for an evaluation.",
        (F::TinkerRollouts, "tags") => "The trajectory's tags.",
        (F::TinkerRollouts, "sampling_client_step") => "The step of the weights that sampled the trajectory.",
        (F::TinkerRollouts, "total_reward") => "The trajectory's reward, summed over its steps.",
        (F::TinkerRollouts, "final_reward") => "The reward given at the trajectory's end.",
        (F::TinkerRollouts, "final_ob_len") => "The last observation's length, in tokens.",
        (F::TinkerRollouts, "num_steps") => "The trajectory's steps (null when the summary lists none).",
        (F::TinkerRollouts, "trajectory_metrics") => "JSON text of the trajectory's metrics.",
        (F::TinkerRolloutSteps, "step_idx") => "The step's place in the trajectory, from 0.",
        (F::TinkerRolloutSteps, "ob_len") => "The observation's length, in tokens.",
        (F::TinkerRolloutSteps, "ac_len") => "The action's length, in tokens.",
        (F::TinkerRolloutSteps, "reward") => "The step's reward.",
        (F::TinkerRolloutSteps, "episode_done") => "Whether the episode ended at this step.",
        (F::TinkerRolloutSteps, "metrics") => "JSON text of the step's metrics.",
        (F::TinkerRolloutSteps, "logs") => "JSON text of the step's logs.",

        // trackio
        (F::TrackioMetrics | F::TrackioSystem | F::TrackioRuns, "run") => "The run's name (`run_name`).",
        (F::TrackioMetrics | F::TrackioSystem | F::TrackioRuns, "run_id") => "The run's id.",
        (F::TrackioMetrics, "step") => "The step logged with the value.",
        (F::TrackioMetrics | F::TrackioSystem, "timestamp") => "When the value was logged (ISO 8601, as written).",
        (F::TrackioMetrics | F::TrackioSystem, "metric") => "The metric's key, as logged.",
        (F::TrackioMetrics | F::TrackioSystem, "value") => "The value, when it is a number (NaN and ±Infinity kept).",
        (F::TrackioMetrics | F::TrackioSystem, "value_text") => {
            "The value, when it is no number: a string, JSON text, or the digits of an integer beyond ±2^53."
        }
        (F::TrackioMetrics | F::TrackioSystem, "log_id") => "The log call's id: the values of one call share it.",
        (F::TrackioRuns, "config") => {
            "JSON text of the run's config, with trackio's `_Username`, `_Created`, `_Group`."
        }
        (F::TrackioRuns, "created_at") => "When the run was created, as written.",

        // Inspect AI
        (F::InspectEvals | F::InspectSamples, "eval_id") => "The eval's id, from the log's header.",
        (F::InspectEvals, "run_id") => "The id of the run the eval belongs to.",
        (F::InspectEvals | F::InspectSamples, "task") => "The task evaluated.",
        (F::InspectEvals, "task_version") => "The task's version, as text.",
        (F::InspectEvals | F::InspectSamples, "model") => "The model evaluated (`provider/model`).",
        (F::InspectEvals, "created") => "When the eval was created (ISO 8601, as written).",
        (F::InspectEvals, "status") => "How the eval ended: `success`, `error`, `cancelled`, …",
        (F::InspectEvals, "error") => "A failed eval's error message (its traceback left out); null otherwise.",
        (F::InspectEvals, "total_samples") => {
            "Samples in the eval's results (null when it has none: a failed or cancelled eval)."
        }
        (F::InspectEvals, "completed_samples") => "Samples completed, from the eval's results (null when it has none).",
        (F::InspectEvals, "scorer") => "The score's name.",
        (F::InspectEvals, "reducer") => "How epochs were reduced (`mean`, …); null when none is named.",
        (F::InspectEvals, "metric") => "The metric (`accuracy`, `stderr`, `mean`, …).",
        (F::InspectEvals, "value") => "The metric's value.",
        (F::InspectEvals, "params") => "JSON text of the metric's parameters (null when none).",
        (F::InspectEvals, "tags") => "JSON text of the eval's tags, with later edits (null when none).",
        (F::InspectEvals, "metadata") => {
            "JSON text of the eval's `metadata` (a checkpoint, a run), with later edits (null when empty)."
        }
        (F::InspectEvals, "task_args") => "JSON text of the arguments the task was given (null when none).",
        (F::InspectEvals, "model_args") => "JSON text of the arguments the model was given (null when none).",
        (F::InspectEvals, "revision") => "JSON text of the git origin and commit the eval ran at (null when none).",
        (F::InspectEvals, "packages") => "JSON text of the versions of the packages that ran the eval.",
        (F::InspectEvals, "config") => "JSON text of the eval's configuration (`limit`, `epochs`, …).",
        (F::InspectEvals, "model_generate_config") => "JSON text of the model's generation settings (null when none).",
        (F::InspectEvals, "dataset") => "JSON text of the dataset's name, location and number of samples.",
        (F::InspectEvals, "plan") => "JSON text of the solvers the eval ran.",
        (F::InspectEvals, "stats") => "JSON text of the eval's start and end times and tokens per model.",
        (F::InspectEvals, "extra") => "JSON text of the eval's other keys (null when none).",
        (F::InspectSamples, "sample_id") => "The sample's `id`, as text (`q1`, `2`).",
        (F::InspectSamples, "epoch") => "The epoch, from 1.",
        (F::InspectSamples, "target") => "The target: text, or the JSON text of a list of targets.",
        (F::InspectSamples, "scores") => "JSON text of each scorer's value (`{\"match\": \"C\"}`).",
        (F::InspectSamples, "error") => "The sample's error message (its traceback left out); null when none.",
        (F::InspectSamples, "total_time") => "Wall time of the sample, in seconds.",
        (F::InspectSamples, "working_time") => "Time the sample worked (waits left out), in seconds.",
        (F::InspectSamples, "input_tokens") => "Input tokens, summed over the models used.",
        (F::InspectSamples, "output_tokens") => "Output tokens, summed over the models used.",
        (F::InspectSamples, "total_tokens") => "Tokens in all, summed over the models used.",
        (F::InspectSamples, "uuid") => "The sample's unique id.",
        (F::InspectSamples, "extra") => "JSON text of the sample's `metadata` (null when empty).",
        (F::InspectSamples, "score_metadata") => "JSON text of each scorer's metadata (null when none has any).",
        (F::InspectSamples, "score_extra") => "JSON text of each scorer's other keys (`reason`, …); null when none.",
        (F::InspectSamples, "stop_reason") => "Why the model stopped (`stop`, `max_tokens`, …).",
        (F::InspectSamples, "error_retries") => "JSON text of the messages of the errors retried; null when none.",
        (F::InspectSamples, "limit") => {
            "JSON text of the limit that stopped the sample (`type`, `limit`, …); null when none."
        }
        (F::InspectSamples, "started_at") => "When the sample started (ISO 8601 text, as written).",
        (F::InspectSamples, "completed_at") => "When the sample ended (ISO 8601 text, as written).",
        (F::InspectSamples, "other") => "JSON text of the sample's other keys (`role_usage`, `turn_count`, …).",
        (F::InspectSamples, "input") => "The input: text, or the JSON text of its messages.",
        (F::InspectSamples, "output") => "The output's completion.",
        (F::InspectSamples, "score_answers") => "JSON text of each scorer's answer, as it read the output.",
        (F::InspectSamples, "score_explanations") => "JSON text of each scorer's explanation.",

        // lm-evaluation-harness
        (F::LmEvalResults | F::LmEvalSamples, "task") => "The task.",
        (F::LmEvalResults, "alias") => "The task's alias, as lm-eval prints it.",
        (F::LmEvalResults, "is_group") => {
            "Whether the task is a group, whose rows aggregate its subtasks' (null when the file does not say)."
        }
        (F::LmEvalResults, "metric") => "The metric (`acc`, `exact_match`, …).",
        (F::LmEvalResults | F::LmEvalSamples, "filter") => {
            "The filter applied to the responses (`none`, `strict-match`, …)."
        }
        (F::LmEvalResults, "value") => "The metric's value.",
        (F::LmEvalResults, "stderr") => "The metric's standard error (null for lm-eval's `N/A`).",
        (F::LmEvalResults, "version") => "The task's version, as text.",
        (F::LmEvalResults, "n_shot") => "Few-shot examples in each prompt.",
        (F::LmEvalResults, "n_samples_original") => "Documents in the task (a group: its subtasks', summed).",
        (F::LmEvalResults, "n_samples_effective") => {
            "Documents evaluated (fewer with `--limit`; a group: its subtasks', summed)."
        }
        (F::LmEvalResults, "higher_is_better") => "Whether a higher value is better.",
        (F::LmEvalResults, "model_name") => "The model evaluated.",
        (F::LmEvalResults, "date") => "When the evaluation ran, in Unix seconds.",
        (F::LmEvalResults, "task_hash") => "The task's hash, to compare runs.",
        (F::LmEvalResults, "model_args") => "The model's arguments, as written (`pretrained=…,revision=…`).",
        (F::LmEvalResults, "git_hash") => "The commit of lm-evaluation-harness that ran.",
        (F::LmEvalResults, "lm_eval_version") => "The version of lm-evaluation-harness that ran.",
        (F::LmEvalResults, "config") => {
            "JSON text of the run's `config`: backend, batch size, `limit`, generation arguments, seeds."
        }
        (F::LmEvalResults, "task_config") => "JSON text of the task's configuration (`configs`).",
        (F::LmEvalResults, "extra") => {
            "JSON text of the results file's other keys (`transformers_version`, `chat_template`, …; null when none)."
        }
        (F::LmEvalSamples, "doc_id") => "The document's place in the task.",
        (F::LmEvalSamples, "target") => "The target: text, or the JSON text of a list.",
        (F::LmEvalSamples, "doc_hash") => "The document's hash, as written.",
        (F::LmEvalSamples, "prompt_hash") => "The prompt's hash, as written.",
        (F::LmEvalSamples, "target_hash") => "The target's hash, as written.",
        (F::LmEvalSamples, "metrics") => "JSON text of the document's value of each metric.",
        (F::LmEvalSamples, "doc") => "JSON text of the document.",
        (F::LmEvalSamples, "arguments") => "JSON text of the requests' arguments.",
        (F::LmEvalSamples, "resps") => "JSON text of the model's responses.",
        (F::LmEvalSamples, "filtered_resps") => "JSON text of the responses after the filter.",

        // lighteval
        (F::LightevalResults, "task") => "The task (`lighteval|gsm8k|0`); `all` is the average over tasks.",
        (F::LightevalResults, "metric") => "The metric.",
        (F::LightevalResults, "value") => "The metric's value.",
        (F::LightevalResults, "stderr") => "The metric's standard error (NaN where none was computed).",
        (F::LightevalResults, "version") => "The task's version, as text.",
        (F::LightevalResults, "model_name") => "The model evaluated.",
        (F::LightevalResults, "lighteval_sha") => "The commit of lighteval that ran.",
        (F::LightevalResults, "start_time") => {
            "lighteval's clock at the evaluation's start, in seconds (a monotonic clock: only differences mean something)."
        }
        (F::LightevalResults, "end_time") => {
            "lighteval's clock at the evaluation's end, in seconds (a monotonic clock: `end_time - start_time` is its duration)."
        }
        (F::LightevalResults, "hashes") => "JSON text of the task's compiled hashes, to compare runs.",
        (F::LightevalResults, "max_samples") => {
            "The most documents each task ran on (`--max-samples`); null when every document was used."
        }
        (F::LightevalResults, "config_general") => "JSON text of `config_general`: the model's configuration among it.",
        (F::LightevalResults, "task_config") => "JSON text of the task's configuration (`config_tasks`).",
        (F::LightevalResults, "task_summary") => "JSON text of the task's summary but its hashes (truncated, padded).",
        (F::LightevalResults, "extra") => "JSON text of the results file's other keys (null when none).",
        (F::LightevalDetails, "task") => "The task: the doc's `task_name`, else the file name's.",
        (F::LightevalDetails, "date_id") => "The run's date, from the file's name.",
        (F::LightevalDetails, "doc_id") => "The doc's `id`.",
        (F::LightevalDetails, "gold_index") => "JSON text of the gold answer's index, or of a list of them.",
        (F::LightevalDetails, "metrics") => "JSON text of the example's value of each metric.",
        (F::LightevalDetails, "logprobs") => "JSON text of the model response's log-probabilities.",
        (F::LightevalDetails, "argmax_logits_eq_gold") => "JSON text of whether each choice's argmax matched the gold.",
        (F::LightevalDetails, "truncated_tokens_count") => "Tokens cut from the input.",
        (F::LightevalDetails, "padded_tokens_count") => "Tokens of padding added.",
        (F::LightevalDetails, "num_samples") => "Samples generated.",
        (F::LightevalDetails, "specific") => "JSON text of the doc's task-specific data.",
        (F::LightevalDetails, "query") => "The query.",
        (F::LightevalDetails, "instruction") => "The instruction.",
        (F::LightevalDetails, "choices") => "JSON text of the choices.",
        (F::LightevalDetails, "input") => "JSON text of the model's input.",
        (F::LightevalDetails, "text") => "JSON text of the model's responses.",
        (F::LightevalDetails, "text_post_processed") => "JSON text of the responses after post-processing.",
        (F::LightevalDetails, "reasonings") => "JSON text of the model's reasonings.",

        // verl
        (F::VerlGenerations, "step") => "The training step of the dump.",
        (F::VerlGenerations, "score") => "The reward's score (NaN and ±Infinity kept).",
        (F::VerlGenerations, "gts") => "The ground truth: text, or the JSON text of a list or object.",
        (F::VerlGenerations, "input") => "The decoded prompt.",
        (F::VerlGenerations, "output") => "The decoded response.",

        // transformers Trainer states
        (F::TrainerState, "output_dir") => {
            "The run's output folder, relative to the pipeline: the state's folder, or the one above its checkpoint's folder."
        }
        (F::TrainerState, "step") => "The global step the entry was logged at.",
        (F::TrainerState, "epoch") => "The epoch the entry was logged at (fractional).",
        (F::TrainerState, "entry") => {
            "The entry's 0-based place in `log_history`: two logs of one metric at one step (an evaluation run again) are told apart by it."
        }
        (F::TrainerState, "metric") => "The logged key, as logged (`loss`, `eval_loss`, `rewards/accuracy/mean`).",
        (F::TrainerState, "value") => "The value, when it is a number (NaN and ±Infinity kept).",
        (F::TrainerState, "value_text") => {
            "A string, list or object logged, as text (JSON text for lists and objects), or an integer beyond ±2^53 as its digits; null for other numbers."
        }

        (F::TrainerRuns, "output_dir") => {
            "The run's output folder, relative to the pipeline: the state's folder, or the one above its checkpoint's folder."
        }
        (F::TrainerRuns, "checkpoint") => {
            "The checkpoint folder the state was saved in (`checkpoint-500`); null for the output folder's own state (`save_state()`)."
        }
        (F::TrainerRuns, "global_step") => "Optimizer steps done when the state was saved (`global_step`).",
        (F::TrainerRuns, "max_steps") => {
            "Steps the run was set to train for (`max_steps`): a `global_step` below it is a run stopped early, or a checkpoint saved on the way."
        }
        (F::TrainerRuns, "epoch") => "The epoch reached when the state was saved (fractional).",
        (F::TrainerRuns, "num_train_epochs") => "Epochs the run was set to train for.",
        (F::TrainerRuns, "logging_steps") => "Steps between two log entries.",
        (F::TrainerRuns, "eval_steps") => "Steps between two evaluations.",
        (F::TrainerRuns, "save_steps") => "Steps between two checkpoints.",
        (F::TrainerRuns, "train_batch_size") => "The batch size per device.",
        (F::TrainerRuns, "num_input_tokens_seen") => "Input tokens trained on, when the run counted them.",
        (F::TrainerRuns, "total_flos") => "Floating-point operations done in training, as the Trainer counts them.",
        (F::TrainerRuns, "best_metric") => {
            "The best value of the metric that picks the best model (`metric_for_best_model`)."
        }
        (F::TrainerRuns, "best_global_step") => "The step of the best checkpoint.",
        (F::TrainerRuns, "best_model_checkpoint") => "The best checkpoint's folder, as the run wrote it.",
        (F::TrainerRuns, "log_entries") => "Entries in the state's `log_history`.",
        (F::TrainerRuns, "last_logged_step") => "The last `step` logged in `log_history` (an integer, 0 or more).",
        (F::TrainerRuns, "extra") => {
            "JSON text of the state's other keys (`stateful_callbacks`, `trial_name`, `trial_params`, …)."
        }

        // TensorBoard event files
        (F::Tensorboard, "log_dir") => {
            "The writer's folder, relative to the pipeline (the file's folder, or the one above the time-named folder `add_hparams` writes into)."
        }
        (F::Tensorboard, "step") => "The step the value was logged at (`global_step`).",
        (F::Tensorboard, "wall_time") => "When the value was logged: seconds since the Unix epoch (UTC), fractional.",
        (F::Tensorboard, "tag") => "The value's tag, as logged (`train/loss`, `eval/accuracy`).",
        (F::Tensorboard, "kind") => {
            "What was logged: `scalar`, `text`, `hparam` (a hyperparameter), `histogram`, `image`, `audio`, or the plugin of another tensor (`hparams`, `pr_curves`, `mesh`); only scalars, texts and hyperparameters carry their value."
        }
        (F::Tensorboard, "value") => {
            "A scalar's value (a float32 `add_scalar` widened exactly; NaN and ±Infinity kept), or a numeric hyperparameter's; null for other kinds."
        }
        (F::Tensorboard, "value_text") => {
            "A text summary's text (`add_text`), or a hyperparameter's that is no number (a string, `true`); null for other kinds."
        }

        // dependency-graph scores
        (F::GraphPassResults, "file") => "The scored generations file's name.",
        (F::GraphPassResults, "template") => "The template; null for the file's total over templates.",
        (F::GraphPassResults, "op") => "The operation count, as written; null for the total over operations.",
        (F::GraphPassResults, "k") => "k of pass@k.",
        (F::GraphPassResults, "pass_at_k") => "pass@k: the share of prompts with a correct answer among k samples.",
        (F::GraphPassResults, "prompts") => "Prompts counted (`prompt_counts`).",
        (F::GraphScoreReport, "scope") => "`file` for a scored file, `aggregate` for the run's totals.",
        (F::GraphScoreReport, "generated_path") => "The run's generations, as written.",
        (F::GraphScoreReport, "gold_dir") => "The run's gold graphs, as written.",
        (F::GraphScoreReport, "results_dir") => "The run's results folder, as written.",
        (F::GraphScoreReport, "file") => "The scored file (null for the aggregate).",
        (F::GraphScoreReport, "skipped") => "Whether the file was skipped (its results existed).",
        (F::GraphScoreReport, "files") => "Files the aggregate scored.",
        (F::GraphScoreReport, "skipped_files") => "Files the aggregate skipped.",
        (F::GraphScoreReport, "template_stats") => "JSON text of the counts by template.",
        (F::GraphScoreReport, "results_path") => "The file's `.graph_results.jsonl`, or the aggregate's report.",
        // (`files` is said above)
        (F::GraphScoreReport, _) if super::graphs::COUNTERS.contains(&column) => {
            "A count of graphs, as the report gives it."
        }

        // shared by the formats that keep the keys they do not know
        (F::TinkerEvalResult | F::TinkerEvalTrajectories | F::EvalMetrics | F::EvalGenerations, "extra")
        | (F::TinkerRollouts | F::TinkerEvalRun | F::LmEvalSamples, "extra") => "JSON text of the other keys.",
        (F::TinkerRolloutSteps, "extra") => "JSON text of the step's other keys.",
        (F::VerlGenerations, "extra") => "JSON text of the reward's extra keys (`acc`, `pred`, …).",

        (F::Wandb, _) => return wandb(wandb_table?, column),
        _ => return None,
    })
}

/// `_source_file` and `_source_line`, as each format places a row.
fn provenance(format: Format, column: &str) -> Option<&'static str> {
    use Format as F;
    Some(match (format, column) {
        (_, "_source_file") => "The raw file the row was read from, relative to the pipeline folder.",
        (F::InspectEvals | F::InspectSamples, "_source_line") => {
            "Where in that log: the archive member of a `.eval` log (`header.json`, `samples/<id>_epoch_<n>.json`), or the JSON pointer in a `.json` log."
        }
        (F::TrackioMetrics | F::TrackioSystem | F::TrackioRuns, "_source_line") => {
            "Where in that file: the row's `id` in the project's database (or in an export's Parquet file), or the record's line in a JSONL fragment (from 1)."
        }
        (F::LightevalDetails, "_source_line") => "The example's row in that Parquet file, from 1.",
        (F::Tensorboard, "_source_line") => "The event record's number in that file, from 1.",
        (F::Wandb, "_source_line") => {
            "Where in that file: the record's number in a `.wandb` log, the line of a CSV or JSON Lines file (from 1), or the JSON pointer in a JSON document."
        }
        (_, "_source_line") => {
            "Where in that file: the record's line (from 1), or its JSON pointer in a JSON document (empty for a document that is one record)."
        }
        _ => return None,
    })
}

/// The columns of W&B's standard tables.
fn wandb(table: &str, column: &str) -> Option<&'static str> {
    Some(match (table, column) {
        ("runs", "entity") => "The W&B entity (user or team).",
        ("runs", "project") => "The W&B project.",
        (_, "run_id") => "The run's id.",
        ("runs", "name") => "The run's display name.",
        ("runs", "state") => "The run's state (`finished`, `crashed`, `running`, …).",
        ("runs", "group") => "The run's group.",
        ("runs", "job_type") => "The run's job type.",
        ("runs", "tags") => "The run's tags.",
        ("runs", "notes") => "The run's notes.",
        ("runs", "created_at") => "When the run was created (UTC).",
        ("runs" | "history" | "system", "runtime_s") => "Seconds since the run started.",
        ("runs", "last_step") => "The run's last step.",
        ("runs", "history_rows") => {
            "Rows of the run's history, as W&B counts them (`historyLineCount`, in API and UI exports); null for a run \
             read from its folder or `.wandb` log, which does not say it (count its rows in the history table)."
        }
        ("runs", "url") => "The run's page on W&B.",
        ("runs", "config") => "JSON text of the run's config (W&B's wrappers and `_wandb` removed).",
        ("runs", "config_raw") => "JSON text of the run's config, as found.",
        ("runs", "summary") => "JSON text of the run's summary values.",
        ("runs", "fields") => "JSON text of the export's columns whose role it does not say.",
        ("runs", "metadata") => {
            "JSON text of the run's environment (`wandb-metadata.json`, or the log's environment record): OS, Python, git, hardware; who ran it, where, its command line and any credentials redacted."
        }
        ("runs", "source") => {
            "What the row was read from (`ui-runs-csv`, `api-runs-csv`, `api-runs-json`, `run-dir`, `wandb-log`)."
        }
        ("runs", "source_files") => "The files the run's row was read from.",
        ("history", "run_name") => "The run's display name.",
        ("history" | "histograms", "step") => "The history row's `_step`.",
        ("history" | "system", "timestamp") => "When the row was logged (`_timestamp`), in Unix seconds.",
        ("history", "metric") => "The metric's key (nested keys joined by dots).",
        ("system", "metric") => "The system metric's key (`system.gpu.0.gpu`).",
        ("history" | "system", "value") => "The value, when it is a number (NaN and ±Infinity kept).",
        ("history" | "system", "value_text") => {
            "The value, when it is no number (or an integer beyond ±2^53): its JSON text."
        }
        ("history", "value_min") => "A chart export's `__MIN` of the value.",
        ("history", "value_max") => "A chart export's `__MAX` of the value.",
        ("history", "x_axis") => "The metric's x-axis: a chart's x column, or the step metric defined for it.",
        ("history", "x") => "The x-axis's value in that history row.",
        ("history", "sampled") => {
            "Whether the run's history was read incomplete (on_sampled = \"accept\"): an export that sampled it, or a log cut short."
        }
        ("histograms", "key") => "The histogram's key.",
        ("histograms", "origin") => "Where the histogram was logged: `summary` or `history`.",
        ("histograms", "bin_edges") => "The bins' edges (one more than the counts).",
        ("histograms", "counts") => "The count in each bin.",
        _ => return None,
    })
}
