"""The screens of storyloom's terminal UI, one per module; import each from its module (this
package runs nothing, so the opening screen paints before the game screen and the engine load).
"""
