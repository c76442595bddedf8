"""Pretrains ALBERT with the masked-LM and sentence-order losses, as the original `run_pretraining.py`: it reads
the TFRecords of `create_pretraining_data.py` (`--input_file`), the model's `--albert_config_file` and
optionally the initial weights of `--init_checkpoint`; `--do_train` writes `model.ckpt-<step>` checkpoints and
TensorBoard summaries in `--output_dir` (a restarted job resumes from the latest), and `--do_eval` scores
every checkpoint there (ours or the original's) and writes `eval_results.txt`, `best_trial.txt` and
`model.ckpt-best`.

Example (the README command, on a v3-512 TPU pod; any strategy works the same way):

    python run_pretraining.py --input_file=data/*.tfrecord --output_dir=out \\
      --albert_config_file=albert_base/albert_config.json --do_train --do_eval \\
      --train_batch_size=4096 --max_seq_length=512 --max_predictions_per_seq=20 --optimizer=lamb \\
      --learning_rate=0.00176 --num_train_steps=125000 --num_warmup_steps=3125 --save_checkpoints_steps=5000 \\
      --use_tpu --tpu_name=my-tpu
"""

from absl import flags

from albert_tf import cli

# TensorFlow reads its log level once, when it loads: set it before the imports below load it.
cli.quiet_tensorflow_start()

from albert_tf.training import driver
from albert_tf.tasks.pretraining import task as pretraining  # noqa: E402
from albert_tf.training import flags as runtime_flags  # noqa: E402
from albert_tf.training import options  # noqa: E402

FLAGS = flags.FLAGS

## Required parameters
flags.DEFINE_string("albert_config_file", None,
                    "The config json file corresponding to the pre-trained ALBERT model. "
                    "This specifies the model architecture.")
flags.DEFINE_string("input_file", None, "Input TF example files (can be a glob or comma separated).")
flags.DEFINE_string("output_dir", None, "The output directory where the model checkpoints will be written.")

## Other parameters
flags.DEFINE_string("init_checkpoint", None, "Initial checkpoint (usually from a pre-trained ALBERT model).")
flags.DEFINE_integer("max_seq_length", 512,
                     "The maximum total input sequence length after WordPiece tokenization. Sequences longer "
                     "than this will be truncated, and sequences shorter than this will be padded. Must match "
                     "data generation.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum number of masked LM predictions per sequence. Must match data generation.")
flags.DEFINE_bool("do_train", True, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("train_batch_size", 4096, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 64, "Total batch size for eval.")
flags.DEFINE_enum("optimizer", "lamb", ["adamw", "lamb"], "The optimizer for training.")
flags.DEFINE_float("learning_rate", 0.00176, "The initial learning rate.")
flags.DEFINE_float("poly_power", 1.0, "The power of poly decay.")
flags.DEFINE_integer("num_train_steps", 125000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 3125, "Number of warmup steps.")
flags.DEFINE_integer("start_warmup_step", 0, "The starting step of warmup.")
flags.DEFINE_integer("save_checkpoints_steps", 5000, "How often to save the model checkpoint.")
flags.DEFINE_integer("keep_checkpoint_max", 5, "How many checkpoints to keep.")
flags.DEFINE_integer("iterations_per_loop", 1000, "How many steps to make in each estimator call.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
flags.DEFINE_bool("init_from_group0", False, "Whether to initialize parameters of other groups from group 0")
flags.DEFINE_float("masked_lm_budget", 0, "If >0, the ratio of masked ngrams to unmasked ngrams. Default 0, "
                   "for offline masking")
runtime_flags.define_runtime_flags(gradient_accumulation=True)
runtime_flags.define_seed_and_memory_flags()

# Each flag -> the option field it sets.
FLAG_TABLE = options.FlagTable(
    options.PretrainingOptions,
    dict(**runtime_flags.runtime_flag_fields(gradient_accumulation=True), albert_config_file="albert_config_file",
         input_file="input_file", output_dir="output_dir", init_checkpoint="init_checkpoint",
         max_seq_length="max_seq_length", max_predictions_per_seq="max_predictions_per_seq", do_train="do_train",
         do_eval="do_eval", train_batch_size="train_batch_size", eval_batch_size="eval_batch_size",
         optimizer="optimizer", learning_rate="learning_rate", poly_power="poly_power",
         num_train_steps="num_train_steps", num_warmup_steps="num_warmup_steps",
         start_warmup_step="start_warmup_step", save_checkpoints_steps="save_checkpoints_steps",
         keep_checkpoint_max="keep_checkpoint_max", iterations_per_loop="iterations_per_loop",
         max_eval_steps="max_eval_steps", init_from_group0="init_from_group0",
         masked_lm_budget="masked_lm_budget"),
    # A library option of `run_pretraining(...)` (the paper's no-sentence-loss ablation), not an original flag.
    no_flag=("sentence_loss_weight",))


def main(argv):
    del argv
    driver.run(pretraining.PretrainingTask, *options.from_flags(FLAGS, FLAG_TABLE, __name__))


if __name__ == "__main__":
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("albert_config_file")
    flags.mark_flag_as_required("output_dir")
    cli.run_app(main, __doc__, ["albert_tf.training.flags"])
