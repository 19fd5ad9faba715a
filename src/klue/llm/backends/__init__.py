"""LLM backends: in process (`hf`) and over HTTP (`openai`), one interface (`base.Backend`)."""
