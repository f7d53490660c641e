"""`python -m ocx.node.inside.relay`: the old path of ocx.inside_run.relay, which runner pages
written before the packages were cut by process still name (D14). It runs that module as
`__main__`, with the same arguments. Standard library only, as the relay."""
import runpy

if __name__ == "__main__":
    runpy.run_module("ocx.inside_run.relay", run_name="__main__", alter_sys=True)
