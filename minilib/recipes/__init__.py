"""How each model is trained: pretraining and fine-tuning recipes a notebook can call.
The command line (`python -m minilib pretrain ...`) only parses options and calls these.

    awd_lstm   ULMFiT stage (a): pretrain_awd_lstm
    ulmfit     stages (b) and (c): fine_tune_lm, fine_tune_classifier
    elmo       the biLM: pretrain_elmo
    word2vec   skip-gram with negative sampling: train_word2vec
"""
