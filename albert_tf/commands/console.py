"""The console scripts of setup.cfg: one door each into `albert_tf.commands.run`."""

from albert_tf.commands import run


def albert_convert():
    run("albert-convert")


def albert_create_pretraining_data():
    run("create_pretraining_data")


def albert_download():
    run("albert-download")


def albert_export():
    run("albert-export")


def albert_normalize_spm():
    run("albert-normalize-spm")


def albert_quickstart():
    run("albert-quickstart")


def albert_reproduce():
    run("albert-reproduce")


def albert_train_vocab():
    run("albert-train-vocab")
