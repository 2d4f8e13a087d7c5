"""The widgets of storyloom's terminal UI, one per module; import each from its module (this
package runs nothing, so the opening screen's light widgets load without the engine).
"""
