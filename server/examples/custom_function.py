import torch


class Cube(torch.autograd.Function):
    """y = x³ with a backward rule written by hand."""

    @staticmethod
    def forward(ctx, x):
        # keep what backward will need
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        # d(x³)/dx = 3x²
        return grad * 3 * x ** 2


x = torch.tensor(2.0, requires_grad=True)
y = Cube.apply(x)
y.backward()
print(x.grad)  # 3 · 2² = 12
