import torch


class Square(torch.autograd.Function):
    """y = x² with a backward rule that forgets the chain rule."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * x  # the local derivative alone: grad_output is never read


x = torch.tensor([1.0, 2.0], requires_grad=True)
loss = (Square.apply(x) * 3).sum()
loss.backward()
print(x.grad)  # the chain rule gives 3 · 2x = [6, 12]
