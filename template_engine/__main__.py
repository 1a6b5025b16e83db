"""``python -m template_engine``: the ``template-engine`` command."""

from template_engine.cli import main

if __name__ == "__main__":
    main(prog_name="template-engine")
